/**
 * The one way the dashboard makes DOM: `h(tag, attributes, ...children)`. Text always goes in as
 * text nodes and attributes through `setAttribute`, never through `innerHTML`, so model output in a
 * trajectory (untrusted) can never become markup.
 */
export type Child = Node | string | number | null | undefined | false;
type Handler = (event: Event) => void;
export type Attributes = Record<string, string | number | boolean | Handler | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value);
    } else if (name === "value" && "value" in element) {
      (element as HTMLInputElement).value = String(value);
    } else if (name === "checked" && "checked" in element) {
      (element as HTMLInputElement).checked = Boolean(value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

/** A `<select>` over `choices` (value, label); `""` is the "any" choice when `any` is given. */
export function select(
  choices: readonly (readonly [string, string])[],
  current: string,
  onChange: (value: string) => void,
  any?: string,
): HTMLSelectElement {
  const options = any === undefined ? choices : [["", any] as const, ...choices];
  const element = h(
    "select",
    { onchange: () => onChange(element.value) },
    ...options.map(([value, label]) => h("option", { value }, label)),
  );
  element.value = current;
  return element;
}
