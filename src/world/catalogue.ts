/**
 * The catalogue of task templates. Order matters only for listings; task ids use the template name,
 * so renaming a template changes ids (and `sum3` is the name a pretraining corpus withholds).
 *
 * Hops count searches. Templates (hops):
 *   lookup      city-pop country-pop city-founded country-founded company-founded company-employees person-born (1)
 *   bridge      capital-pop capital-founded leader-born birthplace-pop birthplace-founded founder-born hq-pop
 *               city-country-pop (2); birth-country-pop founder-birthplace-pop hq-country-founded
 *               leader-birthplace-pop (3)
 *   arithmetic  diff2 (2 + calc), sum3 (3 + calc)
 *   chain       founder-country-pop hq-capital-pop person-capital-founded leader-country-pop (4);
 *               founder-capital-pop founder-capital-founded leader-capital-pop founder-leader-born (5);
 *               founder-leader-birthplace-pop hq-leader-country-pop city-leader-capital-pop (6)
 *   distractor  namesake-born twin-city-pop twin-company-employees (1); namesake-birthplace-pop (2)
 */
import { arithmeticTemplate, pathTemplate, type TaskTemplate } from "./templates.ts";

const yearsBetween = ([x, y]: string[]) =>
  `how many years passed between the founding of ${x} and the founding of ${y} ?`;
const morePeople = ([x, y]: string[]) => `how many more people live in ${x} than in ${y} ?`;

const populationOf = (x: string) => `what is the population of ${x} ?`;
const foundedWhen = (x: string) => `in what year was ${x} founded ?`;

export const TEMPLATES: readonly TaskTemplate[] = [
  // lookup (1 hop)
  pathTemplate({
    family: "lookup",
    name: "city-pop",
    start: "city",
    reads: ["population"],
    question: populationOf,
  }),
  pathTemplate({
    family: "lookup",
    name: "country-pop",
    start: "country",
    reads: ["population"],
    question: populationOf,
  }),
  pathTemplate({
    family: "lookup",
    name: "city-founded",
    start: "city",
    reads: ["founded"],
    question: foundedWhen,
  }),
  pathTemplate({
    family: "lookup",
    name: "country-founded",
    start: "country",
    reads: ["founded"],
    question: foundedWhen,
  }),
  pathTemplate({
    family: "lookup",
    name: "company-founded",
    start: "company",
    reads: ["founded"],
    question: foundedWhen,
  }),
  pathTemplate({
    family: "lookup",
    name: "company-employees",
    start: "company",
    reads: ["employees"],
    question: (x) => `how many employees does ${x} have ?`,
  }),
  pathTemplate({
    family: "lookup",
    name: "person-born",
    start: "person",
    reads: ["born"],
    question: (x) => `in what year was ${x} born ?`,
  }),
  // bridge (2-3 hops)
  pathTemplate({
    family: "bridge",
    name: "capital-pop",
    start: "country",
    reads: ["capital", "population"],
    question: (x) => `what is the population of the capital of ${x} ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "capital-founded",
    start: "country",
    reads: ["capital", "founded"],
    question: (x) => `in what year was the capital of ${x} founded ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "leader-born",
    start: "country",
    reads: ["leader", "born"],
    question: (x) => `in what year was the leader of ${x} born ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "birthplace-pop",
    start: "person",
    reads: ["bornIn", "population"],
    question: (x) => `what is the population of the city where ${x} was born ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "birthplace-founded",
    start: "person",
    reads: ["bornIn", "founded"],
    question: (x) => `in what year was the city where ${x} was born founded ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "founder-born",
    start: "company",
    reads: ["founder", "born"],
    question: (x) => `in what year was the founder of ${x} born ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "hq-pop",
    start: "company",
    reads: ["headquarters", "population"],
    question: (x) => `what is the population of the city where ${x} is headquartered ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "city-country-pop",
    start: "city",
    reads: ["country", "population"],
    question: (x) => `what is the population of the country in which ${x} lies ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "birth-country-pop",
    start: "person",
    reads: ["bornIn", "country", "population"],
    question: (x) => `what is the population of the country where ${x} was born ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "founder-birthplace-pop",
    start: "company",
    reads: ["founder", "bornIn", "population"],
    question: (x) => `what is the population of the city where the founder of ${x} was born ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "hq-country-founded",
    start: "company",
    reads: ["headquarters", "country", "founded"],
    question: (x) => `in what year was the country where ${x} is headquartered founded ?`,
  }),
  pathTemplate({
    family: "bridge",
    name: "leader-birthplace-pop",
    start: "country",
    reads: ["leader", "bornIn", "population"],
    question: (x) => `what is the population of the city where the leader of ${x} was born ?`,
  }),
  // arithmetic (searches + calc)
  arithmeticTemplate("diff2", 2, [
    { type: "city", attribute: "founded", question: yearsBetween },
    { type: "company", attribute: "founded", question: yearsBetween },
    { type: "country", attribute: "founded", question: yearsBetween },
    { type: "city", attribute: "population", question: morePeople },
    { type: "country", attribute: "population", question: morePeople },
    {
      type: "company",
      attribute: "employees",
      question: ([x, y]) => `how many more employees does ${x} have than ${y} ?`,
    },
    {
      type: "person",
      attribute: "born",
      question: ([x, y]) => `how many years passed between the births of ${x} and ${y} ?`,
    },
  ]),
  arithmeticTemplate("sum3", 3, [
    {
      type: "city",
      attribute: "population",
      question: ([x, y, z]) => `what is the total population of ${x} , ${y} and ${z} ?`,
    },
    {
      type: "company",
      attribute: "employees",
      question: ([x, y, z]) => `how many employees do ${x} , ${y} and ${z} have in total ?`,
    },
  ]),
  // chain (4-6 hops)
  pathTemplate({
    family: "chain",
    name: "founder-country-pop",
    start: "company",
    reads: ["founder", "bornIn", "country", "population"],
    question: (x) => `what is the population of the country where the founder of ${x} was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "hq-capital-pop",
    start: "company",
    reads: ["headquarters", "country", "capital", "population"],
    question: (x) => `what is the population of the capital of the country where ${x} is headquartered ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "person-capital-founded",
    start: "person",
    reads: ["bornIn", "country", "capital", "founded"],
    question: (x) => `in what year was the capital of the country where ${x} was born founded ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "leader-country-pop",
    start: "country",
    reads: ["leader", "bornIn", "country", "population"],
    question: (x) => `what is the population of the country where the leader of ${x} was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "founder-capital-pop",
    start: "company",
    reads: ["founder", "bornIn", "country", "capital", "population"],
    question: (x) =>
      `what is the population of the capital of the country where the founder of ${x} was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "founder-capital-founded",
    start: "company",
    reads: ["founder", "bornIn", "country", "capital", "founded"],
    question: (x) =>
      `in what year was the capital of the country where the founder of ${x} was born founded ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "leader-capital-pop",
    start: "country",
    reads: ["leader", "bornIn", "country", "capital", "population"],
    question: (x) =>
      `what is the population of the capital of the country where the leader of ${x} was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "founder-leader-born",
    start: "company",
    reads: ["founder", "bornIn", "country", "leader", "born"],
    question: (x) =>
      `what is the birth year of the leader of the country where the founder of ${x} was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "founder-leader-birthplace-pop",
    start: "company",
    reads: ["founder", "bornIn", "country", "leader", "bornIn", "population"],
    question: (x) =>
      `what is the population of the birthplace of the leader of the country where the founder of ${x} was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "hq-leader-country-pop",
    start: "company",
    reads: ["headquarters", "country", "leader", "bornIn", "country", "population"],
    question: (x) =>
      `what is the population of the country where the leader of the country where ${x} is headquartered was born ?`,
  }),
  pathTemplate({
    family: "chain",
    name: "city-leader-capital-pop",
    start: "city",
    reads: ["country", "leader", "bornIn", "country", "capital", "population"],
    question: (x) =>
      `what is the population of the capital of the country where the leader of the country in which ${x} lies was born ?`,
  }),
  // distractor (the start entity has a near-duplicate)
  pathTemplate({
    family: "distractor",
    name: "namesake-born",
    start: "person",
    reads: ["born"],
    question: (x) => `in what year was ${x} born ?`,
  }),
  pathTemplate({
    family: "distractor",
    name: "namesake-birthplace-pop",
    start: "person",
    reads: ["bornIn", "population"],
    question: (x) => `what is the population of the city where ${x} was born ?`,
  }),
  pathTemplate({
    family: "distractor",
    name: "twin-city-pop",
    start: "city",
    reads: ["population"],
    question: populationOf,
  }),
  pathTemplate({
    family: "distractor",
    name: "twin-company-employees",
    start: "company",
    reads: ["employees"],
    question: (x) => `how many employees does ${x} have ?`,
  }),
];

export function findTemplate(name: string): TaskTemplate {
  const template = TEMPLATES.find((candidate) => candidate.name === name);
  if (!template) {
    throw new Error(`unknown task template "${name}" (valid: ${TEMPLATES.map((t) => t.name).join(", ")})`);
  }
  return template;
}
