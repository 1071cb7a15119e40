/**
 * Lengths of text as the API counts them: **characters are Unicode code points** (service-api.md
 * §8 limits such as "Requirement text max 5,000 characters"; PostgreSQL's `varchar(n)` and
 * `char_length` count the same way). JavaScript's `string.length` counts UTF-16 code units, so
 * an emoji outside the Basic Multilingual Plane (😀, U+1F600) is 2 there and 1 here; validator.js
 * (class-validator's `Length`) counts yet another way (a variation selector U+FE0F is 0). Every
 * length limit on text, in the gateway and in the services, goes through these helpers so one
 * text is accepted or refused the same everywhere.
 */

/**
 * The number of characters (Unicode code points) of `text`: a surrogate pair counts 1; a lone
 * surrogate (which the gateway refuses before any length check) counts 1 too. Linear, no allocation.
 */
export function charCount(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * The first `max` characters (code points) of `text`, never splitting a surrogate pair (a
 * `slice` by UTF-16 units can cut an emoji in two and leave a lone surrogate, which is not
 * valid Unicode). `text` itself when it is no longer than `max`.
 */
export function sliceChars(text: string, max: number): string {
  if (text.length <= max) return text;
  let units = 0;
  for (let chars = 0; chars < max && units < text.length; chars++) {
    const c = text.charCodeAt(units);
    const d = text.charCodeAt(units + 1);
    units += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
  }
  return text.slice(0, units);
}

/**
 * Whether `text` has from `min` to `max` characters (code points, {@link charCount}).
 * @param min smallest accepted count (0 = no lower bound)
 * @param max largest accepted count
 */
export function charLengthWithin(text: string, min: number, max: number): boolean {
  // A string of more than 2·max UTF-16 units has more than max code points: no need to count.
  if (text.length > 2 * max) return false;
  const n = charCount(text);
  return n >= min && n <= max;
}
