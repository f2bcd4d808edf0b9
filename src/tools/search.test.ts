import assert from "node:assert/strict";
import { test } from "node:test";
import { createRng } from "../core/random.ts";
import { callTool } from "./call-tool.ts";
import { createSearchTool, type WorldDocument } from "./search.ts";

const DOCUMENTS: WorldDocument[] = [
  { id: "c1", title: "zenda", text: "zenda : city in ruritania . population 4213 . founded 1850 ." },
  { id: "c2", title: "zendar", text: "zendar : city in ruritania . population 977 . founded 1902 ." },
  { id: "k1", title: "ruritania", text: "ruritania : country . capital zenda . population 90210 ." },
  { id: "p1", title: "ola brandt", text: "ola brandt : person . born in zendar . born 1961 ." },
  {
    id: "f1",
    title: "brandt works",
    text: "brandt works : company . founded by ola brandt . based in zenda .",
  },
];

test("an exact name finds its document: canonical text and ref", async () => {
  const search = createSearchTool(DOCUMENTS);
  const result = await search.call({ query: "zendar" });
  assert.deepEqual(result, { status: "ok", content: DOCUMENTS[1].text, injected: false, refs: ["c2"] });
  assert.deepEqual((await search.call({ query: "population of zenda" })).refs, ["c1"]);
  assert.deepEqual((await search.call({ query: "ola brandt" })).refs, ["p1"]);
});

test("the title is boosted over mentions in other documents", async () => {
  // "zenda" appears in c1, k1 and f1; the document titled zenda must win.
  assert.deepEqual((await createSearchTool(DOCUMENTS).call({ query: "zenda" })).refs, ["c1"]);
  // "brandt" is in the titles of p1 and f1; "works" decides.
  assert.deepEqual((await createSearchTool(DOCUMENTS).call({ query: "brandt works" })).refs, ["f1"]);
});

test("no fuzzy or prefix match by default: a near miss finds nothing", async () => {
  const search = createSearchTool(DOCUMENTS);
  for (const query of ["zend", "zendaa", "ruritanian", "xyzzy", ": . ?"]) {
    const result = await search.call({ query });
    assert.deepEqual(result, { status: "empty", content: "no results", injected: false }, query);
  }
  // The fuzzy option does match it.
  assert.equal((await createSearchTool(DOCUMENTS, { fuzzy: 1 }).call({ query: "zendaa" })).status, "ok");
});

test("topK joins the texts of the best documents, best first", async () => {
  const search = createSearchTool(DOCUMENTS, { topK: 2 });
  const result = await search.call({ query: "zenda" });
  assert.equal(result.refs?.length, 2);
  assert.equal(result.refs?.[0], "c1");
  const second = DOCUMENTS.find((document) => document.id === result.refs?.[1])!;
  assert.equal(result.content, `${DOCUMENTS[0].text} ${second.text}`);
  // Fewer hits than k: only the hits.
  assert.deepEqual((await createSearchTool(DOCUMENTS, { topK: 10 }).call({ query: "1961" })).refs, ["p1"]);
});

test("empty and over-long queries are errors; bad options throw", async () => {
  const search = createSearchTool(DOCUMENTS);
  assert.deepEqual(await search.call({ query: "   " }), {
    status: "error",
    content: "error : empty query",
    injected: false,
  });
  assert.equal((await search.call({ query: "zenda ".repeat(200) })).content, "error : query too long");
  assert.equal((await callTool(search, { query: 7 })).content, "error : invalid argument query");
  assert.throws(() => createSearchTool(DOCUMENTS, { topK: 0 }), /topK/);
});

test("corrupt returns other documents, never a real hit", async () => {
  const search = createSearchTool(DOCUMENTS, { topK: 2 });
  const rng = createRng(3);
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const real = await search.call({ query: "zenda" });
    const wrong = search.corrupt({ query: "zenda" }, real, rng)!;
    assert.equal(wrong.refs?.length, 2);
    for (const ref of wrong.refs!) {
      assert.ok(!real.refs!.includes(ref));
      seen.add(ref);
    }
    assert.equal(wrong.content, wrong.refs!.map((id) => DOCUMENTS.find((d) => d.id === id)!.text).join(" "));
  }
  assert.equal(seen.size, 3); // all three other documents get drawn
  const empty = await search.call({ query: "xyzzy" });
  assert.equal(search.corrupt({ query: "xyzzy" }, empty, rng)?.refs?.length, 1);
  const error = await search.call({ query: "" });
  assert.equal(search.corrupt({ query: "" }, error, rng), null);
  const single = createSearchTool([DOCUMENTS[0]]);
  assert.equal(single.corrupt({ query: "zenda" }, await single.call({ query: "zenda" }), rng), null);
});

test("duplicate ids and repeated construction over one array are fine", async () => {
  const twins = [DOCUMENTS[0], { ...DOCUMENTS[1], id: "c1" }];
  assert.deepEqual((await createSearchTool(twins).call({ query: "zendar" })).content, DOCUMENTS[1].text);
  const a = await createSearchTool(DOCUMENTS).call({ query: "ruritania capital" });
  const b = await createSearchTool(DOCUMENTS, { topK: 1 }).call({ query: "ruritania capital" });
  assert.deepEqual(a, b);
});
