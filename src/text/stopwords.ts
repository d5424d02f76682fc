/**
 * The one English stopword list of the project: the `stopword` package's English list, plus the words
 * people use to frame a question to a support agent that the package (made for prose) keeps. Used by the
 * full-text query builder (store) and the builtin model's term extraction, so both agree on what a
 * "content word" is. Lower-case; compare lower-cased words.
 */
// The English list alone: the package's main entry loads all of its 62 languages (about 4 MiB of memory
// at start). Its src/ files are ES modules without a package "type", which Node 20 recognizes by syntax.
import { eng } from 'stopword/src/stopwords_eng.js';

/**
 * Question scaffolding the package's list does not hold: negation, interrogatives and auxiliaries (`does`, `when`,
 * `why`, `will`), negated auxiliaries as the word splitter leaves them (`doesn` of "doesn't"), pronouns,
 * and the verbs of asking (`tell`, `explain`, `show`, `know`, `want`, `need`, `use`, `mean`). Never a topic word
 * of a knowledge base on their own; `once`, `off`, `down` and `until` are deliberately not here (API
 * names such as `emitter.once()` are topics).
 */
const QUESTION_WORDS =
  'not nor aren cannot couldn didn does doesn doing don hadn hasn haven having isn mustn shouldn wasn weren won wouldn ' +
  'when whom whose why whether will shall may maybe yes yet please ' +
  'its itself myself yours yourself yourselves ours ourselves theirs themselves hers herself she us ' +
  'tell explain know show want wants need needs use used using mean means meaning happen happens thing things something anything really kind sort';

/** Every stopword (lower-case). */
export const STOPWORDS: ReadonlySet<string> = new Set([...eng, ...QUESTION_WORDS.split(' ')]);

/** True when `word` (any case) is a stopword. */
export function isStopword(word: string): boolean {
  return STOPWORDS.has(word.toLowerCase());
}
