/**
 * A tiny builder of self-contained HTML pages: a title, sections of blocks (paragraphs, tables,
 * inline SVG plots, preformatted text, collapsible details), embedded CSS, no scripts, no external
 * fonts or links. Every piece of text is escaped: trajectory text is untrusted model output.
 * SVG comes from src/report/plots.ts and is checked to be a bare `<svg>` without scripts,
 * event-handler attributes or external references before it is inlined.
 */

/** A table cell: plain values, or text with a tone that colours its background (a status read at a glance). */
export type Cell = string | number | boolean | null | undefined | ToneCell;

export const CELL_TONES = ["good", "bad", "unsure", "none"] as const;
export interface ToneCell {
  text: string;
  tone: (typeof CELL_TONES)[number];
}

export type Block =
  | { type: "paragraph"; text: string }
  | { type: "list"; items: readonly string[] }
  | { type: "table"; columns: readonly string[]; rows: readonly (readonly Cell[])[]; caption?: string }
  | { type: "svg"; svg: string; caption?: string }
  | { type: "pre"; text: string }
  | { type: "details"; summary: string; blocks: readonly Block[] };

export interface Section {
  title: string;
  blocks: readonly Block[];
}

export interface Page {
  title: string;
  /** A line under the title (what produced the page, when). */
  subtitle?: string;
  sections: readonly Section[];
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

/** Formats a number for a table: integers as is, others with `digits` significant decimals. */
export function formatNumber(value: number, digits = 3): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "∞" : "-∞";
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(digits);
}

function cellText(cell: Cell): string {
  if (cell === null || cell === undefined) return "–";
  if (typeof cell === "number") return formatNumber(cell);
  if (typeof cell === "object") return cell.text;
  return String(cell);
}

function cellClass(cell: Cell): string {
  if (typeof cell === "number") return ' class="num"';
  if (cell !== null && typeof cell === "object") {
    if (!(CELL_TONES as readonly string[]).includes(cell.tone))
      throw new Error(`unknown cell tone "${cell.tone}"`);
    return ` class="tone-${cell.tone}"`;
  }
  return "";
}

/**
 * Throws unless `svg` is one `<svg>` element free of scripts, event handlers, foreign objects and
 * external references: a plot is data, and a page must stay inert.
 */
export function checkInlineSvg(svg: string): string {
  const trimmed = svg.trim();
  if (!trimmed.startsWith("<svg") || !trimmed.endsWith("</svg>")) {
    throw new Error("inline SVG must be a single <svg> element");
  }
  if (/<script|<foreignObject|\son[a-z]+\s*=|javascript:|(?:xlink:)?href\s*=\s*["']?(?!#)/i.test(trimmed)) {
    throw new Error("inline SVG holds a script, an event handler or an external reference");
  }
  return trimmed;
}

function renderBlock(block: Block): string {
  switch (block.type) {
    case "paragraph":
      return `<p>${escapeHtml(block.text)}</p>`;
    case "list":
      return `<ul>${block.items.map((item) => `<li>${escapeHtml(item)}</li>`).join("")}</ul>`;
    case "pre":
      return `<pre>${escapeHtml(block.text)}</pre>`;
    case "svg": {
      const caption = block.caption ? `<figcaption>${escapeHtml(block.caption)}</figcaption>` : "";
      return `<figure>${checkInlineSvg(block.svg)}${caption}</figure>`;
    }
    case "table": {
      const head = block.columns.map((column) => `<th>${escapeHtml(column)}</th>`).join("");
      const body = block.rows
        .map((row) => {
          const cells = row.map((cell) => `<td${cellClass(cell)}>${escapeHtml(cellText(cell))}</td>`);
          return `<tr>${cells.join("")}</tr>`;
        })
        .join("\n");
      const caption = block.caption ? `<caption>${escapeHtml(block.caption)}</caption>` : "";
      return `<table>${caption}<thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
    }
    case "details":
      return `<details><summary>${escapeHtml(block.summary)}</summary>${block.blocks.map(renderBlock).join("\n")}</details>`;
  }
}

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; padding: 0 1rem; color: #222; }
h1 { margin-bottom: 0.2rem; } .subtitle { color: #666; margin-top: 0; }
section { margin: 2rem 0; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-weight: 600; padding-bottom: 0.3rem; }
figure { margin: 1rem 0; } figcaption { color: #555; font-size: 0.9rem; }
pre { background: #f7f7f7; padding: 0.6rem; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
details { margin: 0.5rem 0; } summary { cursor: pointer; }
td.tone-good { background: #d9f2dc; color: #145a1e; font-weight: 600; }
td.tone-bad { background: #f9dada; color: #7a1414; font-weight: 600; }
td.tone-unsure { background: #fdf0c8; color: #6b4e00; font-weight: 600; }
td.tone-none { background: #eee; color: #555; }
`;

/** The whole page as one HTML string (UTF-8, inline CSS, no scripts). */
export function renderPage(page: Page): string {
  const sections = page.sections
    .map(
      (section) =>
        `<section>\n<h2>${escapeHtml(section.title)}</h2>\n${section.blocks.map(renderBlock).join("\n")}\n</section>`,
    )
    .join("\n");
  const subtitle = page.subtitle ? `<p class="subtitle">${escapeHtml(page.subtitle)}</p>` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(page.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(page.title)}</h1>
${subtitle}
${sections}
</body>
</html>
`;
}
