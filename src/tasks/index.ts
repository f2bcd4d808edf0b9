/** Task sets from files: JSONL, JSON and parquet rows mapped onto `Task`, and back. */
export { readRows, readTaskFile, TASK_FILE_FORMATS, type TaskFileFormat, taskFileFormat } from "./read.ts";
export { plainValue, type RowContext, rowToTask, TaskFileError } from "./row.ts";
export { tasksToParquet, taskToRow, writeTaskFile } from "./write.ts";
