/**
 * One way to show a listed resource (projects, documents, runs): a loader while the first page
 * loads, the error in an alert, a sentence when the list is empty, else a table with a header row.
 */
import { Alert, Loader, Table, Text } from '@mantine/core';
import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { describeError } from '../errors';

export function ListTable<T>({
  query,
  label,
  empty,
  columns,
  row,
}: {
  /** The list call's query; its data is a page of the API (`data` array). */
  query: UseQueryResult<{ data: T[] }>;
  /** The table's accessible name, also used in the loader's label ("Loading projects"). */
  label: string;
  /** What to say when there is nothing yet. */
  empty: ReactNode;
  /** Header cells, in order. */
  columns: ReactNode[];
  /** One `<Table.Tr>` per item. */
  row: (item: T) => ReactNode;
}) {
  if (query.isPending) return <Loader role="status" aria-label={`Loading ${label.toLowerCase()}`} />;
  if (query.error) return <Alert color="red">{describeError(query.error)}</Alert>;
  if (query.data.data.length === 0) return <Text c="dimmed">{empty}</Text>;
  return (
    <Table highlightOnHover aria-label={label}>
      <Table.Thead>
        <Table.Tr>
          {columns.map((c, i) => (
            <Table.Th key={i}>{c}</Table.Th>
          ))}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>{query.data.data.map(row)}</Table.Tbody>
    </Table>
  );
}
