/**
 * Sign in with an API key: the key is checked with GET /api/v2/organization before it is kept
 * (in session storage only, see session.tsx), so a mistyped key is told apart from a signed-in one.
 */
import { Alert, Button, Center, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { KbApiError } from '@kb-platform/sdk/browser';
import { describeError } from '../errors';
import { clientFor, useSession } from '../session';

export function SignInPage() {
  const { signIn } = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setError(null);
    const apiKey = key.trim();
    if (!apiKey) return setError('Enter the API key your operator gave you.');
    setBusy(true);
    try {
      const kb = clientFor(apiKey);
      await kb.data(kb.api.GET('/api/v2/organization'));
      signIn(apiKey);
      const from = (location.state as { from?: string } | null)?.from;
      void navigate(from && from !== '/sign-in' ? from : '/', { replace: true });
    } catch (e) {
      setError(e instanceof KbApiError && e.status === 401 ? 'This API key is not valid (unknown, revoked or mistyped).' : describeError(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={420} component="main">
        <form onSubmit={submit} aria-labelledby="sign-in-title">
          <Stack>
            <Title order={1} size="h2" id="sign-in-title">
              Review workspace
            </Title>
            <Text size="sm" c="dimmed">
              Sign in with your organization's API key. It is kept in this tab only and forgotten when you sign out or close the tab.
            </Text>
            <PasswordInput label="API key" placeholder="kb_…" value={key} onChange={(e) => setKey(e.currentTarget.value)} autoFocus autoComplete="off" />
            {error && (
              <Alert color="red" role="alert" title="Cannot sign in">
                {error}
              </Alert>
            )}
            <Button type="submit" loading={busy}>
              Sign in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
