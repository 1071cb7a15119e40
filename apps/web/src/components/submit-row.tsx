/** The last row of every dialog's form: its submit button, right-aligned. */
import { Button, Group } from '@mantine/core';
import type { ReactNode } from 'react';

export function SubmitRow({ children, loading, disabled }: { children: ReactNode; loading?: boolean; disabled?: boolean }) {
  return (
    <Group justify="flex-end">
      <Button type="submit" loading={loading} disabled={disabled}>
        {children}
      </Button>
    </Group>
  );
}
