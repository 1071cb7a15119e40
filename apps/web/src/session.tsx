/**
 * The signed-in session of the workspace (decisions.md "Review workspace"): the API key lives in
 * the browser's session storage only (never a URL or local storage), so it is gone when the tab
 * closes; the reviewer's name is asked once per session and kept beside it. Every API call goes
 * through one {@link KbClient} of the SDK's browser entry, bound to the page's own origin.
 */
import { KbClient } from '@kb-platform/sdk/browser';
import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';

const KEY_ITEM = 'kb.apiKey';
const REVIEWER_ITEM = 'kb.reviewer';

/** The signed-in state: the client (null when signed out) and the session's reviewer name. */
export interface Session {
  kb: KbClient | null;
  reviewer: string | null;
  // Properties, not methods: pages destructure them (useCallback closures, no `this`).
  signIn: (apiKey: string) => void;
  signOut: () => void;
  setReviewer: (name: string) => void;
}

const SessionContext = createContext<Session | null>(null);

/** A client of the service on this page's origin (the gateway serves both the app and the API). */
export function clientFor(apiKey: string): KbClient {
  return new KbClient({ baseUrl: window.location.origin, apiKey, maxRetries: 2 });
}

/** Provides {@link Session}; reads the key and the reviewer's name left in session storage by this tab. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [apiKey, setApiKey] = useState<string | null>(() => sessionStorage.getItem(KEY_ITEM));
  const [reviewer, setReviewerState] = useState<string | null>(() => sessionStorage.getItem(REVIEWER_ITEM));
  const signIn = useCallback((key: string) => {
    sessionStorage.setItem(KEY_ITEM, key);
    setApiKey(key);
  }, []);
  const signOut = useCallback(() => {
    sessionStorage.removeItem(KEY_ITEM);
    sessionStorage.removeItem(REVIEWER_ITEM);
    setApiKey(null);
    setReviewerState(null);
  }, []);
  const setReviewer = useCallback((name: string) => {
    sessionStorage.setItem(REVIEWER_ITEM, name);
    setReviewerState(name);
  }, []);
  const kb = useMemo(() => (apiKey ? clientFor(apiKey) : null), [apiKey]);
  const value = useMemo(() => ({ kb, reviewer, signIn, signOut, setReviewer }), [kb, reviewer, signIn, signOut, setReviewer]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

/** The session. @throws Error outside {@link SessionProvider}. */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside SessionProvider');
  return s;
}

/** The signed-in client. @throws Error when signed out (routes that use it are behind the sign-in guard). */
export function useKb(): KbClient {
  const { kb } = useSession();
  if (!kb) throw new Error('Not signed in');
  return kb;
}
