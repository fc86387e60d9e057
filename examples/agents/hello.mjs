// The example exec agent of `svc dev`: greets, and writes its outputs as JSON to $SVC_OUTPUT.
import { writeFileSync } from 'node:fs';

const inputs = JSON.parse(process.env.SVC_INPUTS || '{}');
const name = typeof inputs.name === 'string' ? inputs.name : 'world';
const phase = process.env.SVC_PHASE || 'hello';
const greeting = `${process.env.GREETING || 'hello'}, ${name}`;
console.log(`${greeting} (run ${process.env.SVC_RUN_ID || '-'}, phase ${phase})`);
if (process.env.SVC_OUTPUT) {
  writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ greeting, phase }));
}
