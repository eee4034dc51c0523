/**
 * Runs the shell command `script` once this test process is gone, however it ended: `bun test` runs no exit
 * handler, and a killed run must not leave its servers or temporary files behind either. A detached watchdog
 * whose output goes nowhere, so it never holds the test run's stdout open.
 */
export function whenGone(script: string): void {
  Bun.spawn(["sh", "-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${script}`], { stdio: ["ignore", "ignore", "ignore"] }).unref();
}

/** Removes the directory `dir` (made by this process under the temp folder) once this test process is gone. */
export function removeWhenGone(dir: string): void {
  whenGone(`rm -rf '${dir.replace(/'/g, "'\\''")}'`);
}
