/** A page of the dashboard: its element, a first load, and an optional poll for live data. */
export interface View {
  element: HTMLElement;
  title: string;
  /** Called once after the element is shown. */
  load(): Promise<void>;
  /** Called every poll while the view is shown (a live run's new data). */
  refresh?(): Promise<void>;
  dispose?(): void;
}
