import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Model-backed tests load GGUFs; one file at a time keeps the 2-core CI machine from thrashing.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
