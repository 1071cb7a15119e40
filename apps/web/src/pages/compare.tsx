/**
 * Two check runs compared (issue 31 item 6; GET /api/v2/check/runs/{id}/compare?with=): the
 * `runId` run is "before", `withId` "after". A summary (unchanged, changed, only in one run), then
 * each changed requirement with its machine result, confidence, first quote and sources before and
 * after; a source opens the evidence viewer beside the list. "Swap" reads the pair the other way.
 * While either run is being checked the comparison is asked again every 3 s.
 */
import { Alert, Anchor, Badge, Button, Card, Group, Loader, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { compareCheckRuns, type CheckRequirementChange, type CheckRunDetail } from '@kb-platform/sdk/browser';
import { describeError } from '../errors';
import { EvidencePane, fromCheckSource } from '../evidence';
import { formatDate, formatScore } from '../format';
import { useKb } from '../session';

type Outcome = NonNullable<CheckRequirementChange['before']>;
type Source = Outcome['sources'][number];

const RESULT_COLOR: Record<string, string> = { pass: 'green', fail: 'red', pending: 'gray' };
const PANE_HEIGHT = 'calc(100vh - 300px)';

/** A run's name and when it was created, from the run queries the run page shares (['run', id]). */
function useRun(id: string) {
  const kb = useKb();
  return useQuery({
    queryKey: ['run', id],
    queryFn: () => kb.data(kb.api.GET('/api/v2/check/runs/{id}', { params: { path: { id } } })),
    refetchInterval: (q) => (q.state.data && ['pending', 'processing'].includes(q.state.data.status) ? 3000 : false),
  });
}

const sourceLabel = (s: Source) => `${s.title}${s.start_page ? ` p.${s.start_page}${s.end_page && s.end_page !== s.start_page ? `-${s.end_page}` : ''}` : ''}`;

export function ComparePage() {
  const kb = useKb();
  const navigate = useNavigate();
  const { projectId = '', runId = '', withId = '' } = useParams();
  const before = useRun(runId);
  const after = useRun(withId);
  const active = [before.data, after.data].some((r) => r && ['pending', 'processing'].includes(r.status));
  const comparison = useQuery({
    queryKey: ['compare', runId, withId],
    queryFn: ({ signal }) => compareCheckRuns(kb, runId, withId, { signal }),
    refetchInterval: active ? 3000 : false,
  });
  const [shown, setShown] = useState<{ key: string; source: Source } | null>(null);

  if (comparison.isPending || before.isPending || after.isPending) return <Loader role="status" aria-label="Comparing the runs" />;
  const error = comparison.error ?? before.error ?? after.error;
  if (error) return <Alert color="red">{describeError(error)}</Alert>;
  const c = comparison.data!;
  const b = before.data!;
  const a = after.data!;
  const s = c.summary;

  return (
    <Stack>
      <div>
        <Text size="sm">
          <Link to={`/projects/${projectId}/runs/${withId}`}>← {a.name}</Link>
        </Text>
        <Title order={1} size="h2">
          Compare runs
        </Title>
        <Group gap="xs" wrap="wrap">
          <Text size="sm" data-testid="compare-before">
            Before: <RunLink projectId={projectId} run={b} /> ({formatDate(b.created_at)})
          </Text>
          <Text size="sm" aria-hidden>
            →
          </Text>
          <Text size="sm" data-testid="compare-after">
            After: <RunLink projectId={projectId} run={a} /> ({formatDate(a.created_at)})
          </Text>
          <Button size="compact-sm" variant="default" onClick={() => navigate(`/projects/${projectId}/runs/${withId}/compare/${runId}`)}>
            Swap before and after
          </Button>
        </Group>
      </div>
      {active && (
        <Alert color="blue" title="Still being checked">
          A run is still being checked: the comparison follows it as requirements complete.
        </Alert>
      )}
      <Group gap="md" role="group" aria-label="Summary" data-testid="compare-summary">
        <Count label="Changed" value={s.changed} />
        <Count label="Unchanged" value={s.unchanged} />
        <Count label="Only in before" value={s.only_in_run} />
        <Count label="Only in after" value={s.only_in_with} />
      </Group>
      <Text size="sm" c="dimmed">
        A requirement has changed when its result (pass, fail, pending), its confidence band (below or at least 70 %) or its first source differs. Requirements
        are matched by their text.
      </Text>
      <div className="kb-panes" style={{ ['--kb-pane-height' as string]: PANE_HEIGHT }}>
        <div tabIndex={0} role="region" aria-label="Changes" className="kb-pane">
          {c.changes.length === 0 ? (
            <Text>No requirement changed between these runs.</Text>
          ) : (
            <Stack gap="sm">
              {c.changes.map((change, i) => (
                <ChangeCard
                  key={`${i}-${change.order_index}`}
                  change={change}
                  shownKey={shown?.key ?? null}
                  onSource={(side, j, source) => setShown({ key: `${i}/${side}/${j}`, source })}
                  keyOf={(side, j) => `${i}/${side}/${j}`}
                />
              ))}
            </Stack>
          )}
        </div>
        {shown && <EvidencePane kb={kb} source={fromCheckSource(shown.source)} />}
      </div>
    </Stack>
  );
}

function RunLink({ projectId, run }: { projectId: string; run: CheckRunDetail }) {
  return (
    <Anchor component={Link} to={`/projects/${projectId}/runs/${run.id}`} fw={600}>
      {run.name}
    </Anchor>
  );
}

function Count({ label, value }: { label: string; value: number }) {
  return (
    <Paper withBorder px="md" py={6} data-testid={`count-${label.toLowerCase().replace(/ /g, '-')}`}>
      <Text size="xl" fw={700} lh={1.2}>
        {value}
      </Text>
      <Text size="sm">{label}</Text>
    </Paper>
  );
}

function ChangeCard({
  change,
  shownKey,
  onSource,
  keyOf,
}: {
  change: CheckRequirementChange;
  shownKey: string | null;
  onSource: (side: 'before' | 'after', index: number, source: Source) => void;
  keyOf: (side: 'before' | 'after', index: number) => string;
}) {
  const kind = change.before === null ? 'only in after' : change.after === null ? 'only in before' : 'changed';
  return (
    <Card withBorder padding="sm" data-testid="change">
      <Group gap="xs" mb={6} wrap="nowrap" align="flex-start">
        <Badge color={kind === 'changed' ? 'blue' : 'orange'} style={{ flexShrink: 0 }}>
          {kind}
        </Badge>
        <Text size="sm" fw={600} data-testid="change-text">
          {change.order_index + 1}. {change.text}
        </Text>
      </Group>
      <SimpleGrid cols={2} spacing="sm">
        {(['before', 'after'] as const).map((side) => (
          <OutcomeView
            key={side}
            side={side}
            outcome={change[side]}
            isShown={(j) => shownKey === keyOf(side, j)}
            onSource={(j, src) => onSource(side, j, src)}
          />
        ))}
      </SimpleGrid>
    </Card>
  );
}

function OutcomeView({
  side,
  outcome,
  isShown,
  onSource,
}: {
  side: 'before' | 'after';
  outcome: Outcome | null;
  isShown: (index: number) => boolean;
  onSource: (index: number, source: Source) => void;
}) {
  const title = side === 'before' ? 'Before' : 'After';
  if (!outcome)
    return (
      <Stack gap={4} data-testid={`outcome-${side}`}>
        <Text size="xs" fw={700} tt="uppercase">
          {title}
        </Text>
        <Text size="sm" c="dimmed">
          Not in this run.
        </Text>
      </Stack>
    );
  return (
    <Stack gap={4} data-testid={`outcome-${side}`}>
      <Group gap="xs">
        <Text size="xs" fw={700} tt="uppercase">
          {title}
        </Text>
        <Badge color={RESULT_COLOR[outcome.result] ?? 'gray'} data-testid="outcome-result">
          {outcome.result}
        </Badge>
        <Text size="xs">confidence {formatScore(outcome.score)}</Text>
      </Group>
      {outcome.evidence[0] ? (
        <Text size="sm" fs="italic" lineClamp={3}>
          “{outcome.evidence[0]}”
        </Text>
      ) : (
        <Text size="sm" c="dimmed">
          No quoted evidence.
        </Text>
      )}
      {outcome.sources.length > 0 && (
        <Group gap={6}>
          {outcome.sources.map((src, j) => (
            <Button
              key={`${src.node_id}-${j}`}
              size="compact-xs"
              variant={isShown(j) ? 'filled' : 'default'}
              aria-pressed={isShown(j)}
              onClick={() => onSource(j, src)}
              data-testid="source"
              // A long file name wraps instead of being cut off mid-letter in a narrow column.
              h="auto"
              maw="100%"
              py={4}
              styles={{ label: { whiteSpace: 'normal', overflowWrap: 'anywhere', textAlign: 'left', lineHeight: 1.35 } }}
            >
              {j === 0 ? 'First source: ' : ''}
              {sourceLabel(src)}
            </Button>
          ))}
        </Group>
      )}
    </Stack>
  );
}
