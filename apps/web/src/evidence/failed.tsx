/**
 * The evidence viewer's one way to say that something could not be shown: a red alert with a title,
 * the failure in one line (the API envelope's message, code and request id by default) and, when
 * the caller can try again, a "Try again" button.
 */
import { Alert, Button, Stack, Text } from '@mantine/core';
import { describeError } from '../errors';

export function Failed({
  title,
  error,
  onRetry,
  describe = describeError,
}: {
  title: string;
  error: unknown;
  onRetry?: () => void;
  describe?: (error: unknown) => string;
}) {
  return (
    <Alert color="red" title={title} role="alert">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">{describe(error)}</Text>
        {onRetry ? (
          <Button size="xs" variant="light" color="red" onClick={onRetry}>
            Try again
          </Button>
        ) : null}
      </Stack>
    </Alert>
  );
}
