/**
 * The run page's actions after a revision (issue 31 item 6):
 * - "Re-run": a new run of the same requirements against the project's documents as they are now
 *   (POST …/rerun, then …/trigger), whose page opens;
 * - "Compare with…": another run of the project, compared on the compare screen (the older run is
 *   "before", the newer "after"; the screen can swap them).
 */
import { Alert, Button, Checkbox, Modal, NativeSelect, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { rerunCheckRun, type CheckRun } from '@kb-platform/sdk/browser';
import { describeError } from '../errors';
import { formatDate } from '../format';
import { useKb } from '../session';
import { projectRunsQuery } from './runs-panel';
import { SubmitRow } from '../components/submit-row';

/** The compare screen's route for two runs, the older one first ("before"). */
export function compareRoute(projectId: string, a: Pick<CheckRun, 'id' | 'created_at'>, b: Pick<CheckRun, 'id' | 'created_at'>): string {
  const [before, after] = Date.parse(a.created_at) <= Date.parse(b.created_at) ? [a, b] : [b, a];
  return `/projects/${projectId}/runs/${before.id}/compare/${after.id}`;
}

/** "Re-run" and its dialog: an optional name (the API's default is "<name> (rerun)") and the breakdown choice. */
export function RerunButton({ projectId, run, disabled }: { projectId: string; run: CheckRun; disabled?: boolean }) {
  const kb = useKb();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [skipBreakdown, setSkipBreakdown] = useState(false);
  const rerun = useMutation({
    mutationFn: async () => {
      const created = await rerunCheckRun(kb, run.id, name.trim() ? { name: name.trim() } : {});
      await kb.data(kb.api.POST('/api/v2/check/runs/{id}/trigger', { params: { path: { id: created.id } }, body: { skip_breakdown: skipBreakdown } }));
      return created;
    },
    onSuccess: (created) => {
      setOpen(false);
      void queryClient.invalidateQueries({ queryKey: ['runs', projectId] });
      void navigate(`/projects/${projectId}/runs/${created.id}`);
    },
  });
  function submit(event: FormEvent) {
    event.preventDefault();
    rerun.mutate();
  }
  return (
    <>
      <Button variant="default" disabled={disabled} onClick={() => (rerun.reset(), setName(''), setOpen(true))}>
        Re-run
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Re-run this check">
        <form onSubmit={submit}>
          <Stack>
            <Text size="sm">
              The same {run.total_requirements} requirement{run.total_requirements === 1 ? '' : 's'}, checked again against the project's documents as they are
              now (new versions included). This run stays as it is; compare the two afterwards.
            </Text>
            <TextInput
              label="Name of the new run"
              placeholder={`${run.name} (rerun)`}
              maxLength={500}
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              data-autofocus
            />
            <Checkbox
              label="Skip the breakdown into sub-requirements (faster)"
              checked={skipBreakdown}
              onChange={(e) => setSkipBreakdown(e.currentTarget.checked)}
            />
            {rerun.error && <Alert color="red">{describeError(rerun.error)}</Alert>}
            <SubmitRow loading={rerun.isPending}>Re-run now</SubmitRow>
          </Stack>
        </form>
      </Modal>
    </>
  );
}

/**
 * "Compare with…" and its dialog: the project's other runs, newest first; the one offered first is
 * the run this one re-ran, else a re-run of this one, else the newest other run.
 */
export function CompareButton({ projectId, run }: { projectId: string; run: CheckRun }) {
  const kb = useKb();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const runs = useQuery(projectRunsQuery(kb, projectId));
  const others = (runs.data?.data ?? []).filter((r) => r.id !== run.id).sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at));
  const offered = others.find((r) => r.id === run.source_run_id) ?? others.find((r) => r.source_run_id === run.id) ?? others[0];
  const [withId, setWithId] = useState<string | null>(null);
  const chosen = others.find((r) => r.id === withId) ?? offered;

  function submit(event: FormEvent) {
    event.preventDefault();
    if (chosen) void navigate(compareRoute(projectId, run, chosen));
  }
  return (
    <>
      <Button
        variant="default"
        disabled={others.length === 0}
        onClick={() => (setWithId(null), setOpen(true))}
        title={others.length === 0 ? 'The project has no other run' : undefined}
      >
        Compare with…
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Compare with another run">
        <form onSubmit={submit}>
          <Stack>
            <NativeSelect
              label="Run"
              description="The older of the two runs is shown as before, the newer as after."
              value={chosen?.id ?? ''}
              onChange={(e) => setWithId(e.currentTarget.value)}
              data={others.map((r) => ({
                value: r.id,
                label: `${r.name} · ${r.status} · ${formatDate(r.created_at)}${r.id === run.source_run_id ? ' (this run re-ran it)' : r.source_run_id === run.id ? ' (a re-run of this run)' : ''}`,
              }))}
              data-autofocus
            />
            <SubmitRow disabled={!chosen}>Compare</SubmitRow>
          </Stack>
        </form>
      </Modal>
    </>
  );
}
