import assert from "node:assert/strict";
import { test } from "node:test";
import { checkInlineSvg, escapeHtml, formatNumber, renderPage } from "./html.ts";

test("renderPage escapes every text: titles, cells, lists, pre, details", () => {
  const evil = `<script>alert("x")</script>`;
  const html = renderPage({
    title: `report ${evil}`,
    subtitle: evil,
    sections: [
      {
        title: evil,
        blocks: [
          { type: "paragraph", text: evil },
          { type: "list", items: [evil] },
          { type: "table", caption: evil, columns: [evil], rows: [[evil], [0.12345], [null], [3]] },
          { type: "pre", text: `policy> ${evil}` },
          { type: "details", summary: evil, blocks: [{ type: "pre", text: evil }] },
        ],
      },
    ],
  });
  assert.doesNotMatch(html, /<script/i);
  assert.equal(html.split("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;").length - 1, 12); // title twice, then one per text
  assert.match(html, /<td class="num">0\.123<\/td>/);
  assert.match(html, /<td class="num">3<\/td>/);
  assert.match(html, /<td>–<\/td>/);
  assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
  assert.doesNotMatch(html, /https?:\/\/(?!www\.w3\.org)/, "no external resources");
});

test("inline SVG is accepted only when inert", () => {
  const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>hi</text></svg>';
  assert.equal(checkInlineSvg(svg), svg);
  assert.match(
    renderPage({ title: "t", sections: [{ title: "s", blocks: [{ type: "svg", svg }] }] }),
    /<figure><svg/,
  );
  for (const bad of [
    "<div></div>",
    "<svg><script>alert(1)</script></svg>",
    '<svg onload="alert(1)"></svg>',
    '<svg><image href="https://example.com/x.png"/></svg>',
    "<svg><foreignObject><div/></foreignObject></svg>",
  ]) {
    assert.throws(() => checkInlineSvg(bad), /inline SVG/, bad);
  }
});

test("escapeHtml and formatNumber", () => {
  assert.equal(escapeHtml(`a & b <c> "d" 'e'`), "a &amp; b &lt;c&gt; &quot;d&quot; &#39;e&#39;");
  assert.equal(formatNumber(2), "2");
  assert.equal(formatNumber(0.5), "0.500");
  assert.equal(formatNumber(Number.NaN), "NaN");
});

test("a toned cell gets its class (a status coloured at a glance) and its text escaped", () => {
  const html = renderPage({
    title: "t",
    sections: [
      {
        title: "s",
        blocks: [
          {
            type: "table",
            columns: ["status"],
            rows: [[{ text: "REPRODUCED", tone: "good" }], [{ text: "<b>x</b>", tone: "bad" }]],
          },
        ],
      },
    ],
  });
  assert.match(html, /<td class="tone-good">REPRODUCED<\/td>/);
  assert.match(html, /<td class="tone-bad">&lt;b&gt;x&lt;\/b&gt;<\/td>/);
  assert.match(html, /td\.tone-good \{ background/);
  assert.throws(
    () =>
      renderPage({
        title: "t",
        sections: [
          {
            title: "s",
            blocks: [{ type: "table", columns: ["c"], rows: [[{ text: "x", tone: "red" as never }]] }],
          },
        ],
      }),
    /unknown cell tone "red"/,
  );
});
