/**
 * Reads a file an environment variable names (a key file, a password, a certificate) for
 * `iqgate start`: INVALID_CONFIG with exit code 2 naming the variable, the path and the
 * system's code when it cannot be read — never the content.
 */
import { readFileSync } from 'node:fs';
import { IqgateError } from './errors.js';

export function readConfigFile(variable: string, path: string, options: { trim?: boolean } = {}): string {
  try {
    const text = readFileSync(path, 'utf8');
    return options.trim === true ? text.trim() : text;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new IqgateError('INVALID_CONFIG', `${variable}=${path}: cannot read the file (${typeof code === 'string' ? code : 'error'})`, { details: { exitCode: 2 } });
  }
}
