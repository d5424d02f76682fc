/** MongoDB helpers of the suites that run when MONGODB_URI is set. */

/** `base` (a mongodb:// connection string) with its path set to database `name`, its options kept. */
export function withDatabase(base: string, name: string): string {
  const m = /^(mongodb(?:\+srv)?:\/\/[^/?#]*)(?:\/[^?#]*)?(.*)$/i.exec(base);
  if (m === null) throw new Error('MONGODB_URI is not a mongodb:// connection string');
  return `${m[1]}/${name}${m[2]}`;
}
