/**
 * The local broker's optional SASL_SSL listener, as managed Kafka services offer theirs: TLS
 * with a certificate for 127.0.0.1 signed by a CA made at start-up (openssl), SASL with
 * SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, and Kafka's StandardAuthorizer. The SCRAM
 * credentials are written into the KRaft metadata when the storage is formatted
 * (`StorageTool format --add-scram`, KIP-900); PLAIN's users are in the listener's JAAS line.
 * Users: `admin` (a super user), `app` and `stranger` (only what ACLs grant them: nothing until
 * a test grants it). The PLAINTEXT and controller listeners' clients are `User:ANONYMOUS`, a
 * super user too, so every other test and tool works as before.
 *
 * The broker's key is an unencrypted PKCS#8 PEM file (`ssl.keystore.type=PEM`, KIP-651), which
 * needs no keytool and no store password.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SecuredListener {
  /** Bootstrap address of the SASL_SSL listener, e.g. "127.0.0.1:39093". */
  readonly brokers: string;
  readonly port: number;
  /** PEM of the CA that signed the broker's certificate, and its file. */
  readonly caPem: string;
  readonly caFile: string;
  /** The SASL users and their passwords (random per broker). */
  readonly users: { readonly admin: string; readonly app: string; readonly stranger: string };
  /** Directory of the broker's key, certificate and keystore. */
  readonly tlsDir: string;
}

function openssl(args: string[], cwd: string): void {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${result.stderr || result.error?.message}`);
}

/** Makes the CA, the broker's key and certificate, and the users; nothing is started. */
export function prepareSecuredListener(dataDir: string, port: number): SecuredListener {
  const tlsDir = join(dataDir, 'tls');
  mkdirSync(tlsDir, { recursive: true });
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=iqgate test CA'], tlsDir);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'broker.key', '-out', 'broker.csr', '-subj', '/CN=127.0.0.1'], tlsDir);
  writeFileSync(join(tlsDir, 'broker.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(['x509', '-req', '-in', 'broker.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'broker.pem', '-days', '2', '-extfile', 'broker.ext'], tlsDir);
  openssl(['pkcs8', '-topk8', '-nocrypt', '-in', 'broker.key', '-out', 'broker.pk8'], tlsDir);
  // A PEM keystore: the private key, then the certificate chain.
  const keystore = join(tlsDir, 'keystore.pem');
  writeFileSync(keystore, readFileSync(join(tlsDir, 'broker.pk8'), 'utf8') + readFileSync(join(tlsDir, 'broker.pem'), 'utf8') + readFileSync(join(tlsDir, 'ca.pem'), 'utf8'));
  const password = () => randomBytes(12).toString('base64url');
  return {
    brokers: `127.0.0.1:${port}`,
    port,
    caPem: readFileSync(join(tlsDir, 'ca.pem'), 'utf8'),
    caFile: join(tlsDir, 'ca.pem'),
    users: { admin: password(), app: password(), stranger: password() },
    tlsDir,
  };
}

/** StorageTool's `--add-scram` arguments: every user under both SCRAM mechanisms. */
export function scramArguments(secured: SecuredListener): string[] {
  return Object.entries(secured.users).flatMap(([name, password]) =>
    ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((mechanism) => ['--add-scram', `${mechanism}=[name=${name},password=${password}]`]));
}

/** The server.properties lines of the listener and the authorizer. */
export function securedProperties(secured: SecuredListener): string[] {
  const plainUsers = Object.entries(secured.users).map(([name, password]) => `user_${name}="${password}"`).join(' ');
  const prefix = 'listener.name.sasl_ssl';
  return [
    `${prefix}.ssl.keystore.type=PEM`,
    `${prefix}.ssl.keystore.location=${join(secured.tlsDir, 'keystore.pem')}`,
    `${prefix}.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN`,
    `${prefix}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
    `${prefix}.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
    `${prefix}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ${plainUsers};`,
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    'super.users=User:ANONYMOUS;User:admin',
  ];
}
