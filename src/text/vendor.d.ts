/**
 * Types of the two text packages that ship none. Only what Parley uses is declared.
 */

declare module 'wink-porter2-stemmer' {
  /**
   * The Porter2 (Snowball English) stem of one lower-case English word, e.g. `running` -> `run`,
   * `listeners` -> `listen`. A word it has no rule for comes back unchanged.
   */
  export default function stem(word: string): string;
}

declare module 'stopword' {
  /** The package's English stopword list (lower-case words). */
  export const eng: readonly string[];
}

declare module 'stopword/src/stopwords_eng.js' {
  /** The package's English stopword list (lower-case words), without loading its other languages. */
  export const eng: readonly string[];
}
