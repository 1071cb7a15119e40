/**
 * The review workspace (issue 31): providers (Mantine theme, react-query, the session) and the
 * routes under /app/. Every route but the sign-in page needs a signed-in session.
 */
import '@mantine/core/styles.css';
import '@mantine/dropzone/styles.css';
import './panes.css';
import { createTheme, MantineProvider, Modal, type CSSVariablesResolver } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { BrowserRouter, Navigate, Route, Routes, useLocation } from 'react-router';
import type { ReactNode } from 'react';
import { Layout } from './layout';
import { ComparePage } from './pages/compare';
import { ProjectPage } from './pages/project';
import { ProjectsPage } from './pages/projects';
import { RunPage } from './pages/run';
import { SignInPage } from './pages/sign-in';
import { SessionProvider, useSession } from './session';
import { KbApiError } from '@kb-platform/sdk/browser';

/**
 * Contrast of text at WCAG AA (4.5:1, what axe checks): filled controls (buttons, badges) in the 8th
 * shade of their colour with black or white text by luminance (`autoContrast`). The threshold 0.179
 * is where both pass: white text needs a background luminance ≤ 0.183 ((1 + 0.05) / (L + 0.05) ≥ 4.5),
 * black text ≥ 0.175 ((L + 0.05) / 0.05 ≥ 4.5; WCAG 2.1 contrast ratio). Dimmed text is gray 7 instead
 * of Mantine's gray 6 (3.3:1 on white). Light and outline variants are not used for text.
 */
const theme = createTheme({
  primaryShade: 8,
  autoContrast: true,
  luminanceThreshold: 0.179,
  // A dialog's close button (an icon) gets a name screen readers can say (axe "button-name").
  components: { Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }) },
});
const cssVariables: CSSVariablesResolver = () => ({ variables: {}, light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' }, dark: {} });

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by asking again (the SDK already retries 429 and 5xx).
      retry: (count, error) => !(error instanceof KbApiError && error.status < 500) && count < 1,
      refetchOnWindowFocus: false,
      staleTime: 5_000,
    },
  },
});

/** Sends a signed-out visitor to the sign-in page, remembering where they were going. */
function RequireSession({ children }: { children: ReactNode }) {
  const { kb } = useSession();
  const location = useLocation();
  if (!kb) return <Navigate to="/sign-in" replace state={{ from: location.pathname + location.search }} />;
  return <>{children}</>;
}

export function App() {
  return (
    <MantineProvider theme={theme} cssVariablesResolver={cssVariables}>
      <QueryClientProvider client={queryClient}>
        <SessionProvider>
          <BrowserRouter basename="/app">
            <Routes>
              <Route path="/sign-in" element={<SignInPage />} />
              <Route
                element={
                  <RequireSession>
                    <Layout />
                  </RequireSession>
                }
              >
                <Route index element={<ProjectsPage />} />
                <Route path="projects/:projectId" element={<ProjectPage />} />
                <Route path="projects/:projectId/runs/:runId" element={<RunPage />} />
                <Route path="projects/:projectId/runs/:runId/compare/:withId" element={<ComparePage />} />
                <Route path="*" element={<Navigate to="/" replace />} />
              </Route>
            </Routes>
          </BrowserRouter>
        </SessionProvider>
      </QueryClientProvider>
    </MantineProvider>
  );
}
