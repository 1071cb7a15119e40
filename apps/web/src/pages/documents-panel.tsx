/**
 * A project's documents: the list with each document's status and processing `progress` (polled
 * while any is being processed), upload by drag and drop or file picker with a progress bar per
 * file (the SDK's browser upload: reserve, PUT to the presigned URL, process), "Upload a new
 * version" of a document (`replaces`), and deletion after a confirmation.
 */
import { Alert, Badge, Button, Group, Modal, Progress, Stack, Table, Text, VisuallyHidden } from '@mantine/core';
import { Dropzone } from '@mantine/dropzone';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { CONTENT_TYPE_BY_EXTENSION, uploadBlobs, type Document, type UploadProgress } from '@kb-platform/sdk/browser';
import { ListTable } from '../components/list-table';
import { describeError } from '../errors';
import { formatBytes, formatDate } from '../format';
import { useKb } from '../session';

const BUSY = ['awaiting_upload', 'processing', 'ready'];
const ACCEPT = [...new Set(Object.values(CONTENT_TYPE_BY_EXTENSION))];
const EXTENSIONS = Object.keys(CONTENT_TYPE_BY_EXTENSION).join(' ');

/** The status of a document as a badge, with the processing stage and pages when the service reports them. */
export function DocumentStatus({ document }: { document: Document }) {
  const color = document.status === 'completed' ? 'green' : document.status === 'failed' ? 'red' : 'blue';
  const p = document.progress;
  const detail = p ? `${p.stage}${p.pages_total ? ` ${p.pages_done ?? 0}/${p.pages_total} pages` : ''}` : null;
  return (
    <Group gap={6} wrap="nowrap">
      <Badge color={color} data-testid="document-status">
        {document.status}
      </Badge>
      {detail && (
        <Text size="xs" c="dimmed">
          {detail}
        </Text>
      )}
    </Group>
  );
}

export function DocumentsPanel({ projectId }: { projectId: string }) {
  const kb = useKb();
  const queryClient = useQueryClient();
  const [uploads, setUploads] = useState<Record<string, UploadProgress>>({});
  const [uploadError, setUploadError] = useState<string | null>(null);
  const [toDelete, setToDelete] = useState<Document | null>(null);
  const versionOf = useRef<Document | null>(null);
  const versionInput = useRef<HTMLInputElement>(null);

  const documents = useQuery({
    queryKey: ['documents', projectId],
    queryFn: () => kb.page(kb.api.GET('/api/v2/documents', { params: { query: { project_id: projectId, limit: 200 } } })),
    refetchInterval: (q) => (q.state.data?.data.some((d) => BUSY.includes(d.status)) ? 1500 : false),
  });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['documents', projectId] });
    void queryClient.invalidateQueries({ queryKey: ['project', projectId] });
  };

  const batch = useRef(0);
  async function upload(files: File[], replaces?: string) {
    setUploadError(null);
    const call = ++batch.current;
    try {
      const summary = await uploadBlobs(kb, files, {
        projectId,
        ...(replaces ? { replaces } : {}),
        wait: false,
        onProgress: (p) => {
          setUploads((all) => ({ ...all, [`${call}:${p.index}`]: p }));
          if (p.stage === 'processing' || p.stage === 'failed') refresh();
        },
      });
      if (summary.failed.length > 0) setUploadError(summary.failed.map((f) => `${f.file}: ${f.error}`).join('; '));
    } catch (e) {
      setUploadError(describeError(e));
    } finally {
      refresh();
    }
  }

  const remove = useMutation({
    mutationFn: (document: Document) => kb.data(kb.api.DELETE('/api/v2/documents', { body: { document_ids: [document.id] } })),
    onSuccess: () => (setToDelete(null), refresh()),
  });

  const inFlight = Object.entries(uploads).filter(([, u]) => u.stage === 'reserving' || u.stage === 'uploading');
  return (
    <Stack>
      <Dropzone
        onDrop={(files) => void upload(files)}
        accept={ACCEPT}
        maxSize={500 * 1024 * 1024}
        aria-label="Upload documents"
        onReject={(r) => setUploadError(r.map((f) => `${f.file.name}: ${f.errors.map((e) => e.message).join(', ')}`).join('; '))}
      >
        <Stack align="center" gap={4} py="lg">
          <Text fw={500}>Drop files here or click to choose them</Text>
          <Text size="sm" c="dimmed">
            {EXTENSIONS}, up to 500 MB each
          </Text>
        </Stack>
      </Dropzone>
      <input
        ref={versionInput}
        type="file"
        hidden
        aria-label="New version file"
        accept={ACCEPT.join(',')}
        onChange={(e) => {
          const file = e.currentTarget.files?.[0];
          const of = versionOf.current;
          e.currentTarget.value = '';
          if (file && of) void upload([file], of.id);
        }}
      />
      {uploadError && (
        <Alert color="red" title="Upload" withCloseButton onClose={() => setUploadError(null)}>
          {uploadError}
        </Alert>
      )}
      {inFlight.length > 0 && (
        <Stack gap="xs" aria-label="Uploads in progress">
          {inFlight.map(([id, u]) => (
            <div key={id}>
              <Text size="sm">{u.file}</Text>
              <Progress value={u.bytesTotal ? (100 * u.bytesSent) / u.bytesTotal : 0} aria-label={`Upload of ${u.file}`} />
            </div>
          ))}
        </Stack>
      )}
      <ListTable
        query={documents}
        label="Documents"
        empty="No document yet."
        columns={['File', 'Status', 'Version', 'Size', 'Uploaded', <VisuallyHidden key="actions">Actions</VisuallyHidden>]}
        row={(d) => (
          <Table.Tr key={d.id} data-document-id={d.id}>
            <Table.Td>
              <Text size="sm">{d.file_name}</Text>
              {d.error_message && (
                <Text size="xs" c="red">
                  {d.error_message}
                </Text>
              )}
            </Table.Td>
            <Table.Td>
              <DocumentStatus document={d} />
            </Table.Td>
            <Table.Td>
              {d.version}
              {d.superseded_by && (
                <Badge ml={6} color="gray" variant="outline" size="xs">
                  superseded
                </Badge>
              )}
            </Table.Td>
            <Table.Td>{formatBytes(d.size_bytes)}</Table.Td>
            <Table.Td>{formatDate(d.created_at)}</Table.Td>
            <Table.Td>
              <Group gap="xs" wrap="nowrap" justify="flex-end">
                {!d.superseded_by && d.status === 'completed' && (
                  <Button size="compact-xs" variant="default" onClick={() => ((versionOf.current = d), versionInput.current?.click())}>
                    New version
                  </Button>
                )}
                <Button size="compact-xs" variant="subtle" color="red" onClick={() => (remove.reset(), setToDelete(d))} aria-label={`Delete ${d.file_name}`}>
                  Delete
                </Button>
              </Group>
            </Table.Td>
          </Table.Tr>
        )}
      />
      <Modal opened={toDelete !== null} onClose={() => setToDelete(null)} title="Delete document">
        <Stack>
          <Text>
            Delete <b>{toDelete?.file_name}</b>? It is no longer searched or cited; runs already made keep their results.
          </Text>
          {remove.error && <Alert color="red">{describeError(remove.error)}</Alert>}
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setToDelete(null)}>
              Cancel
            </Button>
            <Button color="red" loading={remove.isPending} onClick={() => toDelete && remove.mutate(toDelete)}>
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
