// `npm test`: the whole suite in a random order that can be replayed. The seed is TEST_SEED when set,
// else a random one; it is printed first (and again at the end) so a failing order can be run again.
// Bun's own output, its " N pass" / " N fail" summary included, and its exit code pass through unchanged.
export {}; // a module, so top-level await is allowed

const given = process.env.TEST_SEED?.trim();
if (given && !/^\d+$/.test(given)) {
  console.error(`TEST_SEED must be a whole number, got "${given}"`);
  process.exit(2);
}
const seed = given || String(Math.floor(Math.random() * 2 ** 32));
const replay = `test seed: ${seed} (replay: TEST_SEED=${seed} npm test)`;
console.log(replay);
const proc = Bun.spawn([process.execPath, "test", "--timeout", "60000", "--randomize", `--seed=${seed}`, ...process.argv.slice(2)], {
  stdio: ["inherit", "inherit", "inherit"],
});
const code = await proc.exited;
console.log(replay);
process.exit(code);
