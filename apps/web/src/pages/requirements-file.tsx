/**
 * Requirements from a CSV or XLSX file (issue 31 item 4), inside the New check run dialog: the
 * person picks the file, sees its first rows, and chooses the column holding the requirement
 * text, optionally a column of references (kept as `metadata.ref`) and one of titles (kept as
 * `metadata.title`, which the check reads with the text), and whether the first row is a header (skipped). The choices start from guessColumns' guess. The file is read in the browser;
 * nothing is uploaded but the requirements.
 */
import { Alert, Button, Checkbox, FileButton, Group, Loader, NativeSelect, ScrollArea, Stack, Table, Text } from '@mantine/core';
import { useEffect, useId, useMemo, useRef, useState } from 'react';
import { readRequirementsFile, TABLE_FILE_ACCEPT } from '../runs/read-requirements-file';
import {
  columnLetter,
  guessColumns,
  readingProblem,
  requirementsFromRows,
  type ColumnChoice,
  type RequirementInput,
  type SheetRows,
} from '../runs/requirements-table';

/** Rows shown in the preview (the header row included). */
const PREVIEW_ROWS = 6;
/** Characters of a cell shown in the preview and in the column names. */
const CELL_CHARS = 90;

/** What the file gives the dialog: the requirements, or why there are none to run. */
export interface FileRequirements {
  fileName: string;
  requirements: RequirementInput[];
  /** A sentence for the person when the run cannot be made from this reading; null when it can. */
  problem: string | null;
}

const clip = (s: string, n = CELL_CHARS) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function RequirementsFromFile({ onChange }: { onChange: (value: FileRequirements | null) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [sheets, setSheets] = useState<SheetRows[] | null>(null);
  const [sheetIndex, setSheetIndex] = useState(0);
  const [choice, setChoice] = useState<ColumnChoice | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reading, setReading] = useState(false);
  const labelId = useId();
  const descriptionId = useId();
  const resetRef = useRef<() => void>(null);

  const picks = useRef(0);

  /** Reads the picked file (a later pick wins over a read still running). */
  async function pick(picked: File | null) {
    const n = ++picks.current;
    setFile(picked);
    setSheets(null);
    setChoice(null);
    setError(null);
    if (!picked) return;
    setReading(true);
    try {
      const read = await readRequirementsFile(picked);
      if (n !== picks.current) return;
      setSheets(read);
      setSheetIndex(0);
      setChoice(guessColumns(read[0].rows));
    } catch (e) {
      if (n === picks.current) setError(e instanceof Error ? e.message : String(e));
    } finally {
      if (n === picks.current) setReading(false);
    }
  }

  const sheet = sheets?.[sheetIndex] ?? null;
  const result = useMemo(() => (sheet && choice ? requirementsFromRows(sheet.rows, choice) : null), [sheet, choice]);
  const problem = result ? readingProblem(result) : null;

  useEffect(() => {
    onChange(file && result ? { fileName: file.name, requirements: result.requirements, problem } : null);
    // onChange is the parent's callback (a new function each render): the reading is reported when it changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [file, result, problem]);

  const width = sheet?.rows[0]?.length ?? 0;
  const columnName = (c: number) => {
    const head = sheet && choice?.hasHeader ? sheet.rows[0][c] : '';
    return head ? `${columnLetter(c)} · ${clip(head, 40)}` : columnLetter(c);
  };

  return (
    <Stack gap="sm">
      <Stack gap={4}>
        <Text size="sm" fw={500} id={labelId}>
          Requirements file
        </Text>
        <Text size="xs" c="dimmed" id={descriptionId}>
          CSV or Excel (XLSX), one requirement per row; read in this browser, only the requirements are sent.
        </Text>
        <Group gap="xs" role="group" aria-labelledby={labelId}>
          <FileButton accept={TABLE_FILE_ACCEPT} onChange={(f) => void pick(f)} resetRef={resetRef}>
            {(props) => (
              <Button {...props} variant="default" aria-describedby={descriptionId}>
                {file ? 'Choose another file' : 'Choose a .csv or .xlsx file'}
              </Button>
            )}
          </FileButton>
          {file && (
            <>
              <Text size="sm" fw={600} data-testid="file-name">
                {file.name}
              </Text>
              <Button variant="subtle" color="red" size="compact-sm" onClick={() => (resetRef.current?.(), void pick(null))}>
                Remove the file
              </Button>
            </>
          )}
        </Group>
      </Stack>
      {reading && <Loader size="sm" role="status" aria-label="Reading the file" />}
      {error && (
        <Alert color="red" role="alert" title="The file could not be used">
          {error}
        </Alert>
      )}
      {sheet && choice && result && (
        <>
          <Group align="flex-end" gap="sm" wrap="wrap">
            {sheets!.length > 1 && (
              <NativeSelect
                label="Sheet"
                value={String(sheetIndex)}
                onChange={(e) => {
                  const i = Number(e.currentTarget.value);
                  setSheetIndex(i);
                  setChoice(guessColumns(sheets![i].rows));
                }}
                data={sheets!.map((s, i) => ({ value: String(i), label: s.name }))}
              />
            )}
            <NativeSelect
              label="Requirement column"
              value={String(choice.textColumn)}
              onChange={(e) => {
                const textColumn = Number(e.currentTarget.value);
                setChoice({
                  ...choice,
                  textColumn,
                  refColumn: choice.refColumn === textColumn ? null : choice.refColumn,
                  titleColumn: choice.titleColumn === textColumn ? null : choice.titleColumn,
                });
              }}
              data={[...Array(width).keys()].map((c) => ({ value: String(c), label: columnName(c) }))}
            />
            {(['refColumn', 'titleColumn'] as const).map((key) => {
              const other = key === 'refColumn' ? choice.titleColumn : choice.refColumn;
              return (
                <NativeSelect
                  key={key}
                  label={key === 'refColumn' ? 'Reference column (optional)' : 'Title column (optional)'}
                  description={key === 'titleColumn' ? 'Read with the requirement: “Automatic logoff: …”' : undefined}
                  value={choice[key] === null ? '' : String(choice[key])}
                  onChange={(e) => setChoice({ ...choice, [key]: e.currentTarget.value === '' ? null : Number(e.currentTarget.value) })}
                  data={[
                    { value: '', label: 'None' },
                    ...[...Array(width).keys()].filter((c) => c !== choice.textColumn && c !== other).map((c) => ({ value: String(c), label: columnName(c) })),
                  ]}
                />
              );
            })}
          </Group>
          <Checkbox
            label="The first row is a header (skipped)"
            checked={choice.hasHeader}
            onChange={(e) => setChoice({ ...choice, hasHeader: e.currentTarget.checked })}
          />
          <ScrollArea.Autosize mah={240} type="auto" tabIndex={0} role="region" aria-label="Preview of the file">
            <Table withTableBorder withColumnBorders striped={false} fz="xs" data-testid="file-preview">
              <Table.Caption>
                First {Math.min(PREVIEW_ROWS, sheet.rows.length)} of {sheet.rows.length} rows
                {sheets!.length > 1 ? ` of sheet “${sheet.name}”` : ''}. Requirement column {columnLetter(choice.textColumn)}
                {choice.refColumn !== null ? `, reference column ${columnLetter(choice.refColumn)}` : ''}
                {choice.titleColumn !== null ? `, title column ${columnLetter(choice.titleColumn)}` : ''}.
              </Table.Caption>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th scope="col">Row</Table.Th>
                  {[...Array(width).keys()].map((c) => (
                    <Table.Th scope="col" key={c}>
                      {columnLetter(c)}
                      {c === choice.textColumn ? ' (requirement)' : c === choice.refColumn ? ' (reference)' : c === choice.titleColumn ? ' (title)' : ''}
                    </Table.Th>
                  ))}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {sheet.rows.slice(0, PREVIEW_ROWS).map((row, r) => {
                  const header = r === 0 && choice.hasHeader;
                  return (
                    <Table.Tr key={r} data-header={header || undefined}>
                      <Table.Td>{header ? `${r + 1} (header)` : r + 1}</Table.Td>
                      {row.map((cell, c) => (
                        <Table.Td
                          key={c}
                          fw={!header && c === choice.textColumn ? 600 : undefined}
                          c={header ? 'dimmed' : undefined}
                          fs={header ? 'italic' : undefined}
                        >
                          {clip(cell)}
                        </Table.Td>
                      ))}
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </ScrollArea.Autosize>
          <Text size="sm" aria-live="polite" data-testid="file-count">
            {result.requirements.length} requirement{result.requirements.length === 1 ? '' : 's'} from {file!.name}
            {result.emptyRows > 0 ? ` (${result.emptyRows} row${result.emptyRows === 1 ? '' : 's'} with an empty requirement cell left out)` : ''}
          </Text>
          {problem && (
            <Alert color="red" role="alert" title="This cannot be run">
              {problem}
            </Alert>
          )}
        </>
      )}
    </Stack>
  );
}
