/**
 * A project's check runs: the list (status, counters, people's reviews) and "New check run" from
 * pasted requirements, one per line, or from a CSV or XLSX file (a column chosen on a preview),
 * checked against all the project's current documents. The run is created and triggered at once,
 * then its review screen opens.
 */
import { Alert, Anchor, Badge, Button, Checkbox, Group, Modal, Stack, Table, Tabs, Text, TextInput, Textarea, Title } from '@mantine/core';
import { queryOptions, useMutation, useQuery } from '@tanstack/react-query';
import type { KbClient } from '@kb-platform/sdk/browser';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { ListTable } from '../components/list-table';
import { describeError } from '../errors';
import { formatDate } from '../format';
import { MAX_REQUIREMENTS, type RequirementInput } from '../runs/requirements-table';
import { useKb } from '../session';
import { RequirementsFromFile, type FileRequirements } from './requirements-file';
import { SubmitRow } from '../components/submit-row';

/** Requirements of pasted text: one per non-empty line, trimmed (at most 1,000, the API's limit). */
export function requirementsOf(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
}

/**
 * The query of a project's runs (the first 200: the API's largest page), polled every 2 s
 * while one of them is pending or processing. Shared by the runs tab and the run page's "Compare with…".
 */
export function projectRunsQuery(kb: KbClient, projectId: string) {
  return queryOptions({
    queryKey: ['runs', projectId],
    queryFn: () => kb.page(kb.api.GET('/api/v2/check/runs', { params: { query: { project_id: projectId, limit: 200 } } })),
    refetchInterval: (q) => (q.state.data?.data.some((r) => r.status === 'processing' || r.status === 'pending') ? 2000 : false),
  });
}

export const RUN_STATUS_COLOR: Record<string, string> = { pending: 'gray', processing: 'blue', completed: 'green', stopped: 'orange', failed: 'red' };

export function RunsPanel({ projectId }: { projectId: string }) {
  const kb = useKb();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [text, setText] = useState('');
  const [skipBreakdown, setSkipBreakdown] = useState(false);
  const [source, setSource] = useState<'paste' | 'file'>('paste');
  const [fromFile, setFromFile] = useState<FileRequirements | null>(null);
  const runs = useQuery(projectRunsQuery(kb, projectId));
  const pasted = requirementsOf(text);
  const requirements: RequirementInput[] = source === 'paste' ? pasted.map((t) => ({ text: t })) : (fromFile?.requirements ?? []);
  const problem =
    source === 'paste' ? (pasted.length > MAX_REQUIREMENTS ? `${pasted.length} requirements: a run takes at most 1,000` : null) : (fromFile?.problem ?? null);
  const ready = name.trim() !== '' && requirements.length > 0 && !problem;
  const create = useMutation({
    mutationFn: async () => {
      const run = await kb.data(kb.api.POST('/api/v2/check/runs', { body: { project_id: projectId, name: name.trim(), requirements } }));
      await kb.data(kb.api.POST('/api/v2/check/runs/{id}/trigger', { params: { path: { id: run.id } }, body: { skip_breakdown: skipBreakdown } }));
      return run;
    },
    onSuccess: (run) => navigate(`/projects/${projectId}/runs/${run.id}`),
  });

  function submit(event: FormEvent) {
    event.preventDefault();
    if (ready) create.mutate();
  }

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          Check runs
        </Title>
        <Button onClick={() => (create.reset(), setOpen(true))}>New check run</Button>
      </Group>
      <ListTable
        query={runs}
        label="Check runs"
        empty="No check run yet."
        columns={['Name', 'Status', 'Checked', 'Pass / fail (with reviews)', 'Reviewed', 'Created']}
        row={(r) => (
          <Table.Tr key={r.id}>
            <Table.Td>
              <Anchor component={Link} to={`/projects/${projectId}/runs/${r.id}`}>
                {r.name}
              </Anchor>
            </Table.Td>
            <Table.Td>
              <Badge color={RUN_STATUS_COLOR[r.status] ?? 'gray'}>{r.status}</Badge>
            </Table.Td>
            <Table.Td>
              {r.processed_requirements} / {r.total_requirements}
            </Table.Td>
            <Table.Td>
              {r.review_summary.passed} / {r.review_summary.failed}
            </Table.Td>
            <Table.Td>{r.review_summary.reviewed}</Table.Td>
            <Table.Td>{formatDate(r.created_at)}</Table.Td>
          </Table.Tr>
        )}
      />
      <Modal opened={open} onClose={() => setOpen(false)} title="New check run" size="xl">
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
            <Tabs value={source} onChange={(v) => setSource(v === 'file' ? 'file' : 'paste')}>
              <Tabs.List>
                <Tabs.Tab value="paste">Paste text</Tabs.Tab>
                <Tabs.Tab value="file">From a file (CSV, XLSX)</Tabs.Tab>
              </Tabs.List>
              <Tabs.Panel value="paste" pt="sm">
                <Stack gap="xs">
                  <Textarea
                    label="Requirements"
                    description="One requirement per line; checked against every current document of the project."
                    autosize
                    minRows={6}
                    maxRows={16}
                    value={text}
                    onChange={(e) => setText(e.currentTarget.value)}
                    error={source === 'paste' ? (problem ?? undefined) : undefined}
                  />
                  <Text size="sm" c="dimmed" aria-live="polite">
                    {pasted.length} requirement{pasted.length === 1 ? '' : 's'}
                  </Text>
                </Stack>
              </Tabs.Panel>
              <Tabs.Panel value="file" pt="sm">
                <RequirementsFromFile
                  onChange={(value) => {
                    setFromFile(value);
                    // A run named after the file unless the person named it already.
                    if (value) setName((n) => n || value.fileName.replace(/\.(csv|xlsx)$/i, ''));
                  }}
                />
              </Tabs.Panel>
            </Tabs>
            <Checkbox
              label="Skip the breakdown into sub-requirements (faster)"
              checked={skipBreakdown}
              onChange={(e) => setSkipBreakdown(e.currentTarget.checked)}
            />
            {create.error && <Alert color="red">{describeError(create.error)}</Alert>}
            <SubmitRow loading={create.isPending} disabled={!ready}>
              Create and run
            </SubmitRow>
          </Stack>
        </form>
      </Modal>
    </Stack>
  );
}
