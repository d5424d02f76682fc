/**
 * The one English stopword list: function words and question scaffolding that carry no topic. Used by
 * the full-text query builder (store) and the builtin model's term extraction, so both agree on what a
 * "content word" is. Lower-case; compare lower-cased words.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all also am an and any are aren as at be because been before being ' +
    'below between both but by can cannot could couldn did didn do does doesn doing don down during each ' +
    'either else ever every few for from further get gets getting got had hadn has hasn have haven having ' +
    'her here hers herself him himself his how however i if in into is isn it its itself just let lets like ' +
    'make many may maybe me might mine more most much must mustn my myself need needs neither nor not now of ' +
    'off on once one only or other ought our ours ourselves out over own please same shall shan she should ' +
    'shouldn since so some such than that the their theirs them themselves then there these they this those ' +
    'though through to too under until upon us use used using very via want wants was wasn way we were ' +
    'weren what whats when where whether which while who whom whose why will with within without won would ' +
    'wouldn yes yet you your yours yourself yourselves tell explain know show thing things something ' +
    'anything really kind sort'
  ).split(/\s+/),
);

/** True when `word` (any case) is a stopword. */
export function isStopword(word: string): boolean {
  return STOPWORDS.has(word.toLowerCase());
}
