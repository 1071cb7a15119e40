/** The frame of every signed-in screen: the header (product, organization, sign out) and the page. */
import { AppShell, Anchor, Button, Group, Text } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, Outlet, useNavigate } from 'react-router';
import { useKb, useSession } from './session';

export function Layout() {
  const kb = useKb();
  const { signOut, reviewer } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const org = useQuery({ queryKey: ['organization'], queryFn: () => kb.data(kb.api.GET('/api/v2/organization')) });
  return (
    <AppShell header={{ height: 56 }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Anchor component={Link} to="/" fw={700} c="dark" underline="never">
            Review workspace
          </Anchor>
          <Group gap="md" wrap="nowrap">
            {org.data && (
              <Text size="sm" c="dimmed" data-testid="organization">
                {org.data.name}
                {reviewer ? ` · ${reviewer}` : ''}
              </Text>
            )}
            <Button
              variant="default"
              size="xs"
              onClick={() => {
                signOut();
                queryClient.clear();
                void navigate('/sign-in', { replace: true });
              }}
            >
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
