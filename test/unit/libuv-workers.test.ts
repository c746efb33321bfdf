/**
 * libuv's worker count as libuv itself reads UV_THREADPOOL_SIZE (electron/engine/model/libuv-workers.ts): recorded
 * with every run, and one worker changes how SpecLab lets libgomp's idle threads wait.
 */
import { expect, it } from 'vitest'
import { libuvWorkers, singleLibuvWorker } from '../../electron/engine/model/libuv-workers'

it('reads the worker count as libuv does', () => {
  expect(libuvWorkers({})).toBe(4)
  expect(libuvWorkers({ UV_THREADPOOL_SIZE: '1' })).toBe(1)
  expect(libuvWorkers({ UV_THREADPOOL_SIZE: '8' })).toBe(8)
  expect(libuvWorkers({ UV_THREADPOOL_SIZE: '2000' })).toBe(1024)
  expect(libuvWorkers({ UV_THREADPOOL_SIZE: '-3' })).toBe(1024)
  expect(libuvWorkers({ UV_THREADPOOL_SIZE: 'many' })).toBe(1)
  expect(libuvWorkers({ UV_THREADPOOL_SIZE: '0' })).toBe(1)
})

it('tells one worker from several', () => {
  expect(singleLibuvWorker({ UV_THREADPOOL_SIZE: '1' })).toBe(true)
  expect(singleLibuvWorker({})).toBe(false)
  expect(singleLibuvWorker({ UV_THREADPOOL_SIZE: '2' })).toBe(false)
})
