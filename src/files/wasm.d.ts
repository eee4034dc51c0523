// A .wasm file imported `with { type: "file" }`: Bun gives its path (inside the compiled binary, an embedded one).
declare module "*.wasm" {
  const path: string;
  export default path;
}
