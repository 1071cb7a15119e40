/** The organization's projects: a table (name, documents, last change) and "New project". */
import { Alert, Anchor, Button, Group, Modal, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { ListTable } from '../components/list-table';
import { describeError } from '../errors';
import { formatDate } from '../format';
import { useKb } from '../session';
import { SubmitRow } from '../components/submit-row';

export function ProjectsPage() {
  const kb = useKb();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const projects = useQuery({
    queryKey: ['projects'],
    queryFn: () => kb.page(kb.api.GET('/api/v2/projects', { params: { query: { limit: 200 } } })),
  });
  const create = useMutation({
    mutationFn: () =>
      kb.data(kb.api.POST('/api/v2/projects', { body: { name: name.trim(), ...(description.trim() ? { description: description.trim() } : {}) } })),
    onSuccess: (project) => {
      void queryClient.invalidateQueries({ queryKey: ['projects'] });
      setOpen(false);
      void navigate(`/projects/${project.id}`);
    },
  });

  function submit(event: FormEvent) {
    event.preventDefault();
    if (name.trim()) create.mutate();
  }

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Projects
        </Title>
        <Button onClick={() => (setName(''), setDescription(''), create.reset(), setOpen(true))}>New project</Button>
      </Group>
      <ListTable
        query={projects}
        label="Projects"
        empty="No project yet: create one, then upload its documents."
        columns={['Name', 'Documents', 'Updated']}
        row={(p) => (
          <Table.Tr key={p.id}>
            <Table.Td>
              <Anchor component={Link} to={`/projects/${p.id}`}>
                {p.name}
              </Anchor>
              {p.description && (
                <Text size="xs" c="dimmed">
                  {p.description}
                </Text>
              )}
            </Table.Td>
            <Table.Td>{p.document_count}</Table.Td>
            <Table.Td>{formatDate(p.updated_at)}</Table.Td>
          </Table.Tr>
        )}
      />
      <Modal opened={open} onClose={() => setOpen(false)} title="New project">
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.currentTarget.value)} data-autofocus />
            <Textarea label="Description" maxLength={500} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
            {create.error && <Alert color="red">{describeError(create.error)}</Alert>}
            <SubmitRow loading={create.isPending} disabled={!name.trim()}>
              Create
            </SubmitRow>
          </Stack>
        </form>
      </Modal>
    </Stack>
  );
}
