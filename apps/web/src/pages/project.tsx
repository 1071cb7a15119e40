/** One project: its documents and its check runs, as two tabs (the tab is kept in the URL). */
import { Alert, Loader, Stack, Tabs, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useParams, useSearchParams } from 'react-router';
import { describeError } from '../errors';
import { useKb } from '../session';
import { DocumentsPanel } from './documents-panel';
import { RunsPanel } from './runs-panel';

export function ProjectPage() {
  const kb = useKb();
  const { projectId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const tab = params.get('tab') === 'runs' ? 'runs' : 'documents';
  const project = useQuery({
    queryKey: ['project', projectId],
    queryFn: () => kb.data(kb.api.GET('/api/v2/projects/{id}', { params: { path: { id: projectId } } })),
  });
  if (project.isPending) return <Loader role="status" aria-label="Loading the project" />;
  if (project.error) return <Alert color="red">{describeError(project.error)}</Alert>;
  return (
    <Stack>
      <div>
        <Title order={1} size="h2">
          {project.data.name}
        </Title>
        {project.data.description && <Text c="dimmed">{project.data.description}</Text>}
      </div>
      <Tabs value={tab} onChange={(v) => setParams(v === 'runs' ? { tab: 'runs' } : {}, { replace: true })} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="documents">Documents</Tabs.Tab>
          <Tabs.Tab value="runs">Check runs</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="documents" pt="md">
          <DocumentsPanel projectId={projectId} />
        </Tabs.Panel>
        <Tabs.Panel value="runs" pt="md">
          <RunsPanel projectId={projectId} />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
