/**
 * One project: its documents, its check runs and questions about it (Ask), as tabs (the tab is kept
 * in the URL). The Ask tab's conversation is held here, so it stays while the person switches tabs.
 */
import { Alert, Loader, Stack, Tabs, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useParams, useSearchParams } from 'react-router';
import { describeError } from '../errors';
import { useKb } from '../session';
import { AskPanel, useConversation } from './ask-panel';
import { DocumentsPanel } from './documents-panel';
import { RunsPanel } from './runs-panel';

export function ProjectPage() {
  const kb = useKb();
  const { projectId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const asked = params.get('tab');
  const tab = asked === 'runs' || asked === 'ask' ? asked : 'documents';
  const conversation = useConversation(projectId);
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
      <Tabs value={tab} onChange={(v) => setParams(v === 'runs' || v === 'ask' ? { tab: v } : {}, { replace: true })} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="documents">Documents</Tabs.Tab>
          <Tabs.Tab value="runs">Check runs</Tabs.Tab>
          <Tabs.Tab value="ask">Ask</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="documents" pt="md">
          <DocumentsPanel projectId={projectId} />
        </Tabs.Panel>
        <Tabs.Panel value="runs" pt="md">
          <RunsPanel projectId={projectId} />
        </Tabs.Panel>
        <Tabs.Panel value="ask" pt="md">
          <AskPanel conversation={conversation} />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
