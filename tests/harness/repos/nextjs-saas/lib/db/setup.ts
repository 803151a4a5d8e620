import { exec } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { promisify } from 'node:util';
import readline from 'node:readline';
import crypto from 'node:crypto';

const execAsync = promisify(exec);

function question(query: string): Promise<string> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  return new Promise((resolve) => rl.question(query, (ans) => { rl.close(); resolve(ans); }));
}

async function main() {
  const { stdout } = await execAsync('stripe --version').catch(() => ({ stdout: '' }));
  if (!stdout) {
    console.error('Stripe CLI not found. Install it and run `stripe login` first.');
    process.exit(1);
  }

  const POSTGRES_URL =
    (await question('Postgres URL (leave empty for the local docker default): ')) ||
    'postgresql://postgres:postgres@localhost:54322/postgres';
  const STRIPE_SECRET_KEY = await question('Stripe Secret Key: ');
  const { stdout: secret } = await execAsync('stripe listen --print-secret');
  const AUTH_SECRET = crypto.randomBytes(32).toString('hex');

  const env = {
    POSTGRES_URL,
    STRIPE_SECRET_KEY,
    STRIPE_WEBHOOK_SECRET: secret.trim(),
    BASE_URL: 'http://localhost:3000',
    AUTH_SECRET
  };
  await fs.writeFile('.env', Object.entries(env).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
  console.log('.env file created with the necessary variables.');
}

main();
