import assert from "node:assert/strict";
import { test } from "node:test";
import { renderObservation } from "../env/protocol.ts";
import { parseDocuments } from "./index.ts";

const COUNTRY = "ruritania : country . capital zenda . leader arin vold . population 52133 . founded 1204 .";
const CITY = "zenda : city in ruritania . population 4213 . founded 1850 .";
const PERSON = "arin vold : person . born in zenda . born 1962 .";
const COMPANY =
  "kelto : company . founded by arin vold . headquarters zenda . founded 1991 . employees 340 .";

test("each document type parses into its facts", () => {
  assert.deepEqual(parseDocuments(COUNTRY), [
    {
      title: "ruritania",
      type: "country",
      facts: { capital: "zenda", leader: "arin vold", population: "52133", founded: "1204" },
    },
  ]);
  assert.deepEqual(parseDocuments(CITY)[0].facts, {
    country: "ruritania",
    population: "4213",
    founded: "1850",
  });
  assert.deepEqual(parseDocuments(PERSON)[0], {
    title: "arin vold",
    type: "person",
    facts: { bornIn: "zenda", born: "1962" },
  });
  assert.deepEqual(parseDocuments(COMPANY)[0].facts, {
    founder: "arin vold",
    headquarters: "zenda",
    founded: "1991",
    employees: "340",
  });
});

test("documents are found in an observation whatever joins them", () => {
  for (const joiner of [" ", " | ", " 2 . ", " ; "]) {
    const observation = renderObservation([PERSON, COMPANY, CITY].join(joiner));
    const parsed = parseDocuments(observation);
    assert.deepEqual(
      parsed.map((d) => d.title),
      ["arin vold", "kelto", "zenda"],
      joiner,
    );
    assert.equal(parsed[0].facts.born, "1962");
    assert.equal(parsed[1].facts.employees, "340");
    assert.equal(parsed[2].facts.founded, "1850");
  }
});

test("digits spaced out by a tokenizer still read as one number", () => {
  assert.equal(
    parseDocuments("zenda : city in ruritania . population 4 2 1 3 . founded 1850 .")[0].facts.population,
    "4213",
  );
});

test("error messages and empty results hold no documents", () => {
  for (const text of ["error : service unavailable", "no results", "error : timed out", "", "<obs> </obs>"]) {
    assert.deepEqual(parseDocuments(text), [], text);
  }
});

test("a truncated document keeps the facts it states", () => {
  const [document] = parseDocuments("zenda : city in ruritania . population 42");
  assert.equal(document.facts.country, "ruritania");
  assert.equal(document.facts.population, "42");
});
