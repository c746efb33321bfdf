/**
 * The GPU check's pack and its CPU path, end to end: `npm run gpu-check`'s pack (≤ 64 MiB, no node_modules, every file
 * as its checksum says), copied away from the checkout and run with `run.sh --cpu` — unpacking its own Node, building
 * node-llama-cpp's addon and llama-server from the packed llama.cpp source, measuring, writing the report.
 * Opt-in (SPECLAB_TEST_GPU_CHECK=1): the build takes ~6–15 minutes on 2 cores, the first pack ~2 more (xz).
 * SPECLAB_GPU_CHECK_WORK=DIR keeps run.sh's work folder (its build tree) there, so a rerun only re-checks the build.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { pack, PACK_LIMIT_BYTES, PART_BYTES } from '../../scripts/gpu-check/pack'
import type { GpuCheckReport } from '../../scripts/gpu-check/report'

const enabled = process.env.SPECLAB_TEST_GPU_CHECK === '1'

describe.skipIf(!enabled || process.platform !== 'linux')('gpu-check: pack and run.sh --cpu', () => {
  it('packs within 64 MiB and the CPU path builds, checks greedy sd = ar and writes the report', { timeout: 45 * 60_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-gpu-check-test-'))
    try {
      const out = path.join(dir, 'pack')
      const manifest = await pack(out)
      const total = manifest.files.reduce((n, f) => n + f.bytes, 0)
      expect(total).toBeLessThanOrEqual(PACK_LIMIT_BYTES)
      expect(manifest.totalBytes).toBeLessThanOrEqual(PACK_LIMIT_BYTES)
      for (const file of manifest.files) expect(file.bytes).toBeLessThanOrEqual(PART_BYTES)
      const listing = execFileSync('tar', ['-tJf', path.join(out, 'app.tar.xz')], { encoding: 'utf8', maxBuffer: 64 << 20 })
      expect(listing).not.toMatch(/node_modules/)
      expect(listing).toMatch(/^app\/nlc\/dist\/gpu-check\.mjs$/m)
      expect(manifest.files.map((f) => f.name)).toContain('x64-build-flags.txt')

      // Run from a copy elsewhere: nothing may reach back into the checkout.
      const moved = path.join(dir, 'elsewhere')
      fs.cpSync(out, moved, { recursive: true })
      const reportDir = path.join(dir, 'report')
      const work = process.env.SPECLAB_GPU_CHECK_WORK ?? path.join(dir, 'work')
      const run = spawnSync('bash', [path.join(moved, 'run.sh'), '--cpu', '--work', work, '--out', reportDir, '--', '--prompts', '2', '--max-tokens', '48', '--repeats', '3', '--advise'], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: '', SPECLAB_MODELS: '/nonexistent' },
        maxBuffer: 64 << 20
      })
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0)
      const report = JSON.parse(fs.readFileSync(path.join(reportDir, 'report.json'), 'utf8')) as GpuCheckReport
      expect(report.passed).toBe(true)
      expect(report.mode).toBe('cpu')
      // The pack's addon carries SpecLab's patch: evaluations alone run on the JS thread, top-k requests take its read.
      expect(report.native).toMatchObject({ build: 'localBuild', gpu: 'cpu', jsThreadEvaluation: true, topLogitsRead: true })
      // The check's arms, then (--advise) the advisor's best three and llama-server's default speculation.
      expect(report.arms.slice(0, 6).map((a) => a.method)).toEqual(['ar', 'sd', 'svip', 'pearl', 'llama-server:ar', 'llama-server:draft'])
      expect(report.arms.at(-1)!.label).toBe('llama-server:draft+gamma=3@1/2/1')
      if (!report.advice || 'error' in report.advice) throw new Error(`no advice: ${JSON.stringify(report.advice)}`)
      expect(report.advice.rows).toHaveLength(3)
      for (const row of report.advice.rows) {
        expect(report.arms.some((a) => a.label === row.label)).toBe(true)
        expect(row.measured?.cells).toBe(2 * 3)
        expect(row.predicted.tokensPerSecond).toBeGreaterThan(0)
      }
      expect(report.advice.serverDefaultMeasured?.cells).toBe(2 * 3)
      expect(report.advice.medianError).not.toBeNull()
      for (const a of report.arms) expect(a.tokensPerSecond?.cells).toBe(2 * 3)
      expect(report.greedy.find((g) => g.arm.startsWith('sd@'))).toMatchObject({ same: 2, prompts: 2 })
      // A reused build tree (SPECLAB_GPU_CHECK_WORK) builds nothing now; the run that made it is kept as first-build.
      expect(Math.max(report.buildSeconds.build ?? 0, report.buildSeconds['first-build'] ?? 0)).toBeGreaterThan(0)
      expect(report.engines.map((e) => [e.speclab, e.llamaServer])).toEqual([['ar@1/2', 'llama-server:ar@1/2'], ['sd@1/2', 'llama-server:draft@1/2/1']])
      expect(report.engines[0]!.ratio?.median).toBeGreaterThan(0)
      // The token split ran beside the pack's own llama-server: 2 prompts × 47 timed tokens, all through the addon path.
      expect(report.tokenSplit).toMatchObject({ tokens: 2 * 47, direct: 2 * 47 })
      expect('serverMs' in report.tokenSplit && report.tokenSplit.serverMs?.cells).toBe(2)
      expect(fs.readFileSync(path.join(reportDir, 'report.md'), 'utf8')).toContain('# SpecLab GPU check — PASSED')

      // Sampled (--temperature 1): the build tree is reused, every arm samples, the advisor predicts expected values,
      // and there is no greedy check.
      const sampledDir = path.join(dir, 'sampled')
      const sampledRun = spawnSync(
        'bash',
        [path.join(moved, 'run.sh'), '--cpu', '--work', work, '--out', sampledDir, '--', '--prompts', '2', '--max-tokens', '32', '--repeats', '2', '--advise', '--temperature', '1', '--arms', 'ar@1/2'],
        { cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '', SPECLAB_MODELS: '/nonexistent' }, maxBuffer: 64 << 20 }
      )
      expect(sampledRun.status, `${sampledRun.stdout}\n${sampledRun.stderr}`).toBe(0)
      const sampled = JSON.parse(fs.readFileSync(path.join(sampledDir, 'report.json'), 'utf8')) as GpuCheckReport
      expect(sampled.config.temperature).toBe(1)
      expect(sampled.greedy).toEqual([])
      if (!sampled.advice || 'error' in sampled.advice) throw new Error(`no sampled advice: ${JSON.stringify(sampled.advice)}`)
      expect(sampled.advice.rows).toHaveLength(3)
      expect(fs.readFileSync(path.join(sampledDir, 'report.md'), 'utf8')).toContain('One sampled trace (temperature 1; expected rounds)')
      // Kept for docs/performance.md.
      if (process.env.SPECLAB_GPU_CHECK_KEEP) fs.cpSync(reportDir, process.env.SPECLAB_GPU_CHECK_KEEP, { recursive: true })
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
