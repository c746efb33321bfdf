/**
 * Seeded PRNG: xoshiro128** seeded through splitmix32. Every random draw of a run comes from here, never from
 * node-llama-cpp's clock-seeded sampler, so a run is reproducible from its recorded seed.
 * Each prompt gets its own stream derived from (seed, prompt index): repeated prompts draw independent samples
 * and any single prompt can be replayed alone.
 * (Hand-written: 20 lines with a published reference; the npm alternatives pull in far more than we need.)
 */
export interface Prng {
  /** Uniform in [0, 1). */
  next(): number
}

function splitmix32(state: number): () => number {
  return () => {
    state = (state + 0x9e3779b9) | 0
    let z = state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) >>> 0
  }
}

export function createPrng(seed: number, stream = 0): Prng {
  const mix = splitmix32((seed ^ Math.imul(stream + 1, 0x27d4eb2d)) | 0)
  const s = new Uint32Array([mix(), mix(), mix(), mix()])
  if (s[0] === 0 && s[1] === 0 && s[2] === 0 && s[3] === 0) s[0] = 1
  return {
    next(): number {
      const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0
      const t = s[1] << 9
      s[2] ^= s[0]
      s[3] ^= s[1]
      s[1] ^= s[2]
      s[0] ^= s[3]
      s[2] ^= t
      s[3] = rotl(s[3], 11)
      return result / 4294967296
    }
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}
