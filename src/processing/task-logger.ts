/** What a task and the units around it log to: fields first, then the message (pino's shape). */
export interface TaskLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}
