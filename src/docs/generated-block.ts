/**
 * Generated blocks inside hand-written pages: the text between `<!-- generated:NAME -->` and
 * `<!-- /generated:NAME -->` is owned by a script (`npm run docs`), and a test compares it with
 * what the script would write now, so a figure on a page cannot drift from its source file.
 */

function markers(name: string): { start: string; end: string } {
  return { start: `<!-- generated:${name} -->`, end: `<!-- /generated:${name} -->` };
}

/** The block's current text (between the markers, without them); throws when the page has none. */
export function readBlock(page: string, name: string, where: string): string {
  const { start, end } = markers(name);
  const from = page.indexOf(start);
  const to = page.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${where}: no ${start} … ${end} block`);
  return page
    .slice(from + start.length, to)
    .replace(/^\n/, "")
    .replace(/\n$/, "");
}

/** The page with the block's text replaced by `content`. */
export function writeBlock(page: string, name: string, content: string, where: string): string {
  readBlock(page, name, where);
  const { start, end } = markers(name);
  const from = page.indexOf(start) + start.length;
  const to = page.indexOf(end);
  return `${page.slice(0, from)}\n${content}\n${page.slice(to)}`;
}
