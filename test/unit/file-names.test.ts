import { expect, test } from "bun:test";
import { fileName, NAME_RE } from "../../src/files/names.ts";

// Stored file names (CONTRACT §14): `<random 10 chars>_<sanitised original>`.
const sanitised = (original: string | undefined) => fileName(original).slice(11);

test.each([
  ["résumé Final.TXT", "resume_Final.txt"],
  ["Ærøskøbing café.png", "AEroskobing_cafe.png"],
  ["../../etc/passwd", "passwd"],
  ["C:\\Users\\me\\photo.JPEG", "photo.jpeg"],
  [".hidden", "hidden"],
  ["日本語.pdf", "file.pdf"],
  ["a<script>.html", "a_script.html"],
  [undefined, "file"],
])("%p is stored as <random>_%p", (original, name) => {
  const stored = fileName(original);
  expect(stored).toMatch(NAME_RE);
  expect(sanitised(original)).toBe(name);
});
