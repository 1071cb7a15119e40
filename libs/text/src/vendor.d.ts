// Minimal type declarations for the two untyped NLP dependencies this library uses.

declare module 'wink-porter2-stemmer' {
  /** Porter2 (Snowball English) stemmer: lowercase word in, stem out. */
  function stem(word: string): string;
  export = stem;
}

declare module 'stopword' {
  /** English stop-word list shipped by the `stopword` package (lowercase). */
  export const eng: string[];
}
