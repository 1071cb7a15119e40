/**
 * One check run, for review (issue 31 item 5): live progress while it is checked (Stop), the
 * report in each format, the review queue (least confident first, confident verdicts folded away,
 * filters) and, for the selected requirement, its sub-requirements, verdicts, justifications and
 * the evidence viewer, with the person's decision: accept the machine's result or override it
 * (pass / fail) with a comment. Keyboard: j / ↓ next, k / ↑ previous, a accept, p pass, f fail.
 * The reviewer's name is asked once per session.
 */
import {
  Accordion,
  Alert,
  Badge,
  Button,
  Card,
  Group,
  Loader,
  Menu,
  Modal,
  Paper,
  Progress,
  ScrollArea,
  SegmentedControl,
  Stack,
  Switch,
  Text,
  TextInput,
  Textarea,
  Title,
  UnstyledButton,
} from '@mantine/core';
import { useHotkeys, useMediaQuery } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { downloadReport, setRequirementReview, type CheckRequirement, type CheckRunDetail, type ReportFormat } from '@kb-platform/sdk/browser';
import { describeError } from '../errors';
import { EvidencePane, fromCheckSource } from '../evidence';
import { formatDate, formatScore, requirementLabel } from '../format';
import { CONFIDENT, effectiveResult, machineResult, NO_FILTER, reviewQueue, scoreOf, type QueueFilter } from '../review/queue';
import { useKb, useSession } from '../session';
import { CompareButton, RerunButton } from './run-actions';
import { RUN_STATUS_COLOR } from './runs-panel';
import { SubmitRow } from '../components/submit-row';

type Source = NonNullable<CheckRequirement['sub_requirements'][number]['sources']>[number];

const RESULT_COLOR: Record<string, string> = { pass: 'green', fail: 'red', pending: 'gray' };

/**
 * Height of the three panes (queue, requirement, evidence): the window less the header and the
 * run's title block, so each pane scrolls on its own and the decision buttons stay in sight.
 */
const PANE_HEIGHT = 'calc(100vh - 190px)';

/** Saves a file the browser received (the report) under `name`. */
function saveFile(bytes: Uint8Array, name: string, type: string) {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const REPORT_TYPES: Record<ReportFormat, string> = {
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv',
  pdf: 'application/pdf',
};

export function RunPage() {
  const kb = useKb();
  const { projectId = '', runId = '' } = useParams();
  const queryClient = useQueryClient();
  const [filter, setFilter] = useState<QueueFilter>(NO_FILTER);
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const [source, setSource] = useState<Source | null>(null);
  const [exportError, setExportError] = useState<string | null>(null);
  // Below 62em the panes stack (panes.css): the queue then gets a shorter scroll of its own.
  const narrow = useMediaQuery('(max-width: 62em)') ?? false;

  const run = useQuery({
    queryKey: ['run', runId],
    queryFn: () => kb.data(kb.api.GET('/api/v2/check/runs/{id}', { params: { path: { id: runId } } })),
    refetchInterval: (q) => (q.state.data && ['pending', 'processing'].includes(q.state.data.status) ? 1500 : false),
  });
  const stop = useMutation({
    mutationFn: () => kb.data(kb.api.POST('/api/v2/check/runs/{id}/stop', { params: { path: { id: runId } } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['run', runId] }),
  });

  const requirements = useMemo(() => run.data?.requirements ?? [], [run.data?.requirements]);
  const queue = useMemo(() => reviewQueue(requirements, filter), [requirements, filter]);
  const ordered = useMemo(() => [...queue.uncertain, ...queue.pending, ...queue.confident], [queue]);
  const selected = requirements.find((r) => r.id === selectedId) ?? ordered[0] ?? null;

  // The first source of the selected requirement is shown until the person picks another.
  useEffect(() => {
    const first = selected?.sub_requirements.flatMap((s) => s.sources ?? [])[0] ?? null;
    setSource(first);
    // Only when another requirement is selected or its status changes, not on every refetch of the run.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selected?.id, selected?.status]);

  const move = (step: number) => {
    if (ordered.length === 0) return;
    const at = selected ? ordered.findIndex((r) => r.id === selected.id) : -1;
    const next = ordered[Math.min(ordered.length - 1, Math.max(0, at + step))];
    setSelectedId(next.id);
    document.querySelector(`[data-requirement-id="${next.id}"]`)?.scrollIntoView({ block: 'nearest' });
  };

  async function exportReport(format: ReportFormat) {
    setExportError(null);
    try {
      saveFile(await downloadReport(kb, runId, format), `run-${runId}.${format}`, REPORT_TYPES[format]);
    } catch (e) {
      setExportError(describeError(e));
    }
  }

  if (run.isPending) return <Loader role="status" aria-label="Loading the run" />;
  if (run.error) return <Alert color="red">{describeError(run.error)}</Alert>;
  const r = run.data;
  const active = r.status === 'pending' || r.status === 'processing';
  return (
    <Stack>
      <Group justify="space-between" align="flex-start">
        <div>
          <Text size="sm">
            <Link to={`/projects/${projectId}?tab=runs`}>← Check runs</Link>
          </Text>
          <Title order={1} size="h2">
            {r.name}
          </Title>
          <Group gap="xs">
            <Badge color={RUN_STATUS_COLOR[r.status] ?? 'gray'} data-testid="run-status">
              {r.status}
            </Badge>
            <Text size="sm" c="dimmed">
              {r.processed_requirements} of {r.total_requirements} checked · machine {r.passed_requirements} pass / {r.failed_requirements} fail · with reviews{' '}
              {r.review_summary.passed} pass / {r.review_summary.failed} fail · {r.review_summary.reviewed} reviewed
            </Text>
          </Group>
          {r.source_run_id && (
            <Text size="sm">
              A re-run of <Link to={`/projects/${projectId}/runs/${r.source_run_id}`}>an earlier run</Link> ·{' '}
              <Link to={`/projects/${projectId}/runs/${r.source_run_id}/compare/${r.id}`}>compare with it</Link>
            </Text>
          )}
        </div>
        <Group>
          <RerunButton projectId={projectId} run={r} disabled={active} />
          <CompareButton projectId={projectId} run={r} />
          {active && (
            <Button variant="default" color="red" loading={stop.isPending} onClick={() => stop.mutate()}>
              Stop
            </Button>
          )}
          <Menu position="bottom-end">
            <Menu.Target>
              <Button disabled={r.status === 'pending'}>Export report</Button>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Item onClick={() => void exportReport('xlsx')}>Excel (XLSX)</Menu.Item>
              <Menu.Item onClick={() => void exportReport('csv')}>CSV</Menu.Item>
              <Menu.Item onClick={() => void exportReport('pdf')}>PDF</Menu.Item>
            </Menu.Dropdown>
          </Menu>
        </Group>
      </Group>
      {active && <Progress value={r.total_requirements ? (100 * r.processed_requirements) / r.total_requirements : 0} animated aria-label="Run progress" />}
      {stop.error && <Alert color="red">{describeError(stop.error)}</Alert>}
      {exportError && (
        <Alert color="red" title="Export">
          {exportError}
        </Alert>
      )}
      <div className="kb-panes" style={{ ['--kb-pane-height' as string]: PANE_HEIGHT }}>
        <Paper withBorder p="sm" className="kb-pane" data-grow="fixed">
          <QueueFilters filter={filter} onChange={setFilter} />
          <ScrollArea.Autosize mah={narrow ? '40vh' : `calc(${PANE_HEIGHT} - 130px)`} mt="sm">
            <nav aria-label="Requirements to review">
              <QueueList items={[...queue.uncertain, ...queue.pending]} selectedId={selected?.id ?? null} onSelect={setSelectedId} />
              {queue.confident.length > 0 && (
                <Accordion variant="contained" mt="sm">
                  <Accordion.Item value="confident">
                    <Accordion.Control>Confident verdicts ({queue.confident.length})</Accordion.Control>
                    <Accordion.Panel>
                      <QueueList items={queue.confident} selectedId={selected?.id ?? null} onSelect={setSelectedId} />
                    </Accordion.Panel>
                  </Accordion.Item>
                </Accordion>
              )}
              {ordered.length === 0 && (
                <Text size="sm" c="dimmed" mt="sm">
                  No requirement matches these filters.
                </Text>
              )}
            </nav>
          </ScrollArea.Autosize>
        </Paper>
        <div tabIndex={0} role="region" aria-label="Requirement" className="kb-pane">
          {selected ? (
            <RequirementDetail runId={runId} requirement={selected} source={source} onSource={setSource} onMove={move} run={r} />
          ) : (
            <Text c="dimmed">Nothing to review yet.</Text>
          )}
        </div>
        {source && <EvidencePane kb={kb} source={fromCheckSource(source)} />}
      </div>
    </Stack>
  );
}

function QueueFilters({ filter, onChange }: { filter: QueueFilter; onChange: (f: QueueFilter) => void }) {
  return (
    <Stack gap="xs" role="group" aria-label="Filters">
      <SegmentedControl
        size="xs"
        aria-label="Result"
        value={filter.result}
        onChange={(v) => onChange({ ...filter, result: v })}
        data={[
          { label: 'All results', value: 'all' },
          { label: 'Pass', value: 'pass' },
          { label: 'Fail', value: 'fail' },
        ]}
      />
      <SegmentedControl
        size="xs"
        aria-label="Reviewed"
        value={filter.reviewed}
        onChange={(v) => onChange({ ...filter, reviewed: v })}
        data={[
          { label: 'All', value: 'all' },
          { label: 'To review', value: 'unreviewed' },
          { label: 'Reviewed', value: 'reviewed' },
        ]}
      />
      <Switch
        size="xs"
        label="Outdated reviews only"
        checked={filter.outdatedOnly}
        onChange={(e) => onChange({ ...filter, outdatedOnly: e.currentTarget.checked })}
      />
    </Stack>
  );
}

/** The requirement's reference and title ("164.312(a)(2)(iii) · Automatic logoff"), null without either. */
const label = (q: CheckRequirement) => requirementLabel(q.metadata);

function QueueList({ items, selectedId, onSelect }: { items: CheckRequirement[]; selectedId: string | null; onSelect: (id: string) => void }) {
  return (
    <Stack gap={4}>
      {items.map((q) => {
        const result = effectiveResult(q);
        const current = selectedId === q.id;
        return (
          <UnstyledButton
            key={q.id}
            data-requirement-id={q.id}
            aria-current={current ? 'true' : undefined}
            onClick={() => onSelect(q.id)}
            p={6}
            style={{ borderRadius: 4, background: current ? 'var(--mantine-color-blue-light)' : undefined }}
          >
            <Group gap={6} wrap="nowrap" align="flex-start">
              <Badge size="xs" color={RESULT_COLOR[result]} variant={q.review && !q.review.outdated ? 'filled' : 'dot'} style={{ flexShrink: 0 }}>
                {result}
              </Badge>
              <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
                {formatScore(scoreOf(q))}
              </Text>
              <Text size="sm" lineClamp={2}>
                {q.order_index + 1}. {label(q) && <b>{label(q)} — </b>}
                {q.text}
              </Text>
            </Group>
          </UnstyledButton>
        );
      })}
    </Stack>
  );
}

function RequirementDetail({
  runId,
  run,
  requirement,
  source,
  onSource,
  onMove,
}: {
  runId: string;
  run: CheckRunDetail;
  requirement: CheckRequirement;
  source: Source | null;
  onSource: (s: Source) => void;
  onMove: (step: number) => void;
}) {
  const kb = useKb();
  const { reviewer, setReviewer } = useSession();
  const queryClient = useQueryClient();
  const [comment, setComment] = useState('');
  const [askName, setAskName] = useState<null | 'pass' | 'fail'>(null);
  const [name, setName] = useState('');
  const machine = machineResult(requirement);
  const score = scoreOf(requirement);
  // Reset the comment field for another requirement or a new review, not while the person types.
  // eslint-disable-next-line react-hooks/exhaustive-deps
  useEffect(() => setComment(requirement.review?.comment ?? ''), [requirement.id, requirement.review?.reviewed_at]);

  const review = useMutation({
    mutationFn: ({ decision, by }: { decision: 'pass' | 'fail'; by: string }) =>
      setRequirementReview(kb, runId, requirement.id, { decision, reviewer: by, ...(comment.trim() ? { comment: comment.trim() } : {}) }),
    onSuccess: (updated) => {
      queryClient.setQueryData<CheckRunDetail>(['run', runId], (old) =>
        old ? { ...old, requirements: old.requirements.map((q) => (q.id === updated.id ? updated : q)) } : old,
      );
      void queryClient.invalidateQueries({ queryKey: ['run', runId] });
    },
  });
  const decide = (decision: 'pass' | 'fail') => {
    if (requirement.status !== 'completed' || review.isPending) return;
    if (!reviewer) return setAskName(decision);
    review.mutate({ decision, by: reviewer });
  };
  useHotkeys([
    ['j', () => onMove(1)],
    ['ArrowDown', () => onMove(1)],
    ['k', () => onMove(-1)],
    ['ArrowUp', () => onMove(-1)],
    ['p', () => decide('pass')],
    ['f', () => decide('fail')],
    ['a', () => machine !== 'pending' && decide(machine)],
  ]);

  function submitName(event: FormEvent) {
    event.preventDefault();
    const n = name.trim();
    if (!n || !askName) return;
    setReviewer(n);
    review.mutate({ decision: askName, by: n });
    setAskName(null);
  }

  return (
    <Stack gap="sm" aria-label="Selected requirement">
      <Card withBorder>
        <Stack gap={6}>
          <Group gap="xs">
            <Text size="sm" c="dimmed">
              Requirement {requirement.order_index + 1} of {run.total_requirements}
            </Text>
            <Badge color={RESULT_COLOR[machine]} data-testid="machine-result">
              machine: {machine}
            </Badge>
            <Text size="sm" data-testid="confidence">
              confidence {formatScore(score)}
              {score !== null && score < CONFIDENT ? ' · below 0.7: check the evidence' : ''}
            </Text>
          </Group>
          {label(requirement) && (
            <Text size="sm" fw={600} data-testid="requirement-label">
              {label(requirement)}
            </Text>
          )}
          <Title order={2} size="h4" data-testid="requirement-text">
            {requirement.text}
          </Title>
          {requirement.review && (
            <Text size="sm" data-testid="review">
              Reviewed <b>{requirement.review.decision}</b> by {requirement.review.reviewer} on {formatDate(requirement.review.reviewed_at)}
              {requirement.review.comment ? ` — “${requirement.review.comment}”` : ''}
              {requirement.review.outdated && (
                <Badge ml={6} color="orange" size="xs">
                  outdated: checked again since
                </Badge>
              )}
            </Text>
          )}
          <Textarea
            label="Comment"
            placeholder="Why you accept or override (optional)"
            maxLength={2000}
            autosize
            minRows={1}
            value={comment}
            onChange={(e) => setComment(e.currentTarget.value)}
          />
          <Group gap="xs">
            <Button
              size="xs"
              variant="default"
              disabled={machine === 'pending'}
              loading={review.isPending}
              onClick={() => machine !== 'pending' && decide(machine)}
            >
              Accept ({machine}) <Kbd k="a" />
            </Button>
            <Button size="xs" color="green" disabled={machine === 'pending'} onClick={() => decide('pass')}>
              Pass <Kbd k="p" />
            </Button>
            <Button size="xs" color="red" disabled={machine === 'pending'} onClick={() => decide('fail')}>
              Fail <Kbd k="f" />
            </Button>
            <Text size="xs" c="dimmed">
              j / k: next / previous
            </Text>
          </Group>
          {review.error && <Alert color="red">{describeError(review.error)}</Alert>}
        </Stack>
      </Card>
      {requirement.sub_requirements.map((s) => (
        <Card withBorder key={s.id} padding="sm" data-testid="sub-requirement">
          <Group gap="xs" mb={4}>
            <Badge color={s.status === 'comply' ? 'green' : s.status === 'not-comply' ? 'red' : 'gray'}>{s.status}</Badge>
            <Text size="xs" c="dimmed">
              {formatScore(s.score)}
            </Text>
          </Group>
          <Text size="sm" fw={500}>
            {s.text}
          </Text>
          <Text size="sm" mt={4} style={{ whiteSpace: 'pre-wrap' }}>
            {s.justification}
          </Text>
          {(s.sources ?? []).length > 0 && (
            <Group gap={6} mt={6}>
              {(s.sources ?? []).map((src, i) => (
                <Button
                  key={`${src.node_id}-${i}`}
                  size="compact-xs"
                  variant={source === src ? 'filled' : 'light'}
                  onClick={() => onSource(src)}
                  aria-pressed={source === src}
                  data-testid="source"
                >
                  {src.title}
                  {src.start_page ? ` p.${src.start_page}${src.end_page && src.end_page !== src.start_page ? `-${src.end_page}` : ''}` : ''}
                </Button>
              ))}
            </Group>
          )}
        </Card>
      ))}
      <Modal opened={askName !== null} onClose={() => setAskName(null)} title="Your name">
        <form onSubmit={submitName}>
          <Stack>
            <Text size="sm">Reviews carry the reviewer's name in the audit log and the reports. It is asked once for this session.</Text>
            <TextInput label="Reviewer" required maxLength={200} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
            <SubmitRow disabled={!name.trim()}>Save and record “{askName}”</SubmitRow>
          </Stack>
        </form>
      </Modal>
    </Stack>
  );
}

function Kbd({ k }: { k: string }) {
  return (
    <Text span size="xs" ml={6} opacity={0.7} aria-hidden>
      {k}
    </Text>
  );
}
