import { createJimp } from "@jimp/core";
import { defaultFormats, defaultPlugins } from "jimp";
import decodeWebp, { init as initWebpDecoder } from "@jsquash/webp/decode.js";
import encodeWebp, { init as initWebpEncoder } from "@jsquash/webp/encode.js";
import { simd } from "wasm-feature-detect";
import webpDecoderWasm from "@jsquash/webp/codec/dec/webp_dec.wasm" with { type: "file" };
import webpEncoderWasm from "@jsquash/webp/codec/enc/webp_enc.wasm" with { type: "file" };
import webpEncoderSimdWasm from "@jsquash/webp/codec/enc/webp_enc_simd.wasm" with { type: "file" };

// The image codecs thumbnails are made with (thumbs.ts loads this module at the first one): jimp decodes and
// encodes PNG, JPEG and GIF in plain JavaScript, and WebP goes through the WebAssembly codec of @jsquash/webp,
// whose .wasm files are imported as files so that `bun build --compile` embeds them (jimp's own WebP plugin loads
// them from node_modules by path, which the single binary lacks).

let webpReady: Promise<void> | null = null;

/** Loads the WebP codec from the embedded .wasm files, once. */
function loadWebp(): Promise<void> {
  webpReady ??= (async () => {
    const compile = async (path: string) => WebAssembly.compile(await Bun.file(path).arrayBuffer());
    await initWebpDecoder(await compile(webpDecoderWasm));
    // The encoder picks its SIMD build where the engine has SIMD: the module must be the matching one.
    await initWebpEncoder(await compile((await simd()) ? webpEncoderSimdWasm : webpEncoderWasm));
  })();
  return webpReady;
}

const webp = () => ({
  mime: "image/webp" as const,
  hasAlpha: true,
  encode: async (bitmap: { data: Buffer; width: number; height: number }) => {
    await loadWebp();
    const out = await encodeWebp({ data: new Uint8ClampedArray(bitmap.data), width: bitmap.width, height: bitmap.height, colorSpace: "srgb" }, { quality: 82 });
    return Buffer.from(out);
  },
  decode: async (data: Buffer) => {
    await loadWebp();
    const r = await decodeWebp(new Uint8Array(data).buffer);
    return { data: Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength), width: r.width, height: r.height };
  },
});

/** jimp with the WebP codec: reads and writes the four types thumbnails are made of. */
export const Images = createJimp({ formats: [...defaultFormats, webp], plugins: defaultPlugins });

/**
 * The image `bytes` of type `type` resized, in the same type: `w` by `h` covering the box and cropped in the middle,
 * or to one side with the other 0 (the ratio kept). Decodes the whole image: callers check its size first.
 */
export async function resizeImage(bytes: Buffer, type: string, size: { w: number; h: number }): Promise<Buffer> {
  const img = await Images.read(bytes);
  const { width, height } = img.bitmap;
  if (size.w && size.h) img.cover({ w: size.w, h: size.h });
  else if (size.w) img.resize({ w: size.w, h: Math.max(1, Math.round((height * size.w) / width)) });
  else img.resize({ w: Math.max(1, Math.round((width * size.h) / height)), h: size.h });
  return await img.getBuffer(type as "image/png");
}
