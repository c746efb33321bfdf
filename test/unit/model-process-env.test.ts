/**
 * The environment a model process starts with (electron/engine/model/model-process-env.ts): one libuv worker where
 * SpecLab's OpenMP CPU build runs the models, so each evaluation's OpenMP team has one master; nothing changed where
 * the prebuilt binary or a GPU runs them, or where the user chose a size.
 */
import { describe, expect, it } from 'vitest'
import { libuvWorkers, modelProcessEnv, singleLibuvWorker } from '../../electron/engine/model/model-process-env'

describe('modelProcessEnv', () => {
  it('gives a model process on the OpenMP CPU build one libuv worker, and keeps the rest of the environment', () => {
    const env = modelProcessEnv({ PATH: '/bin', OMP_WAIT_POLICY: 'passive' }, true)
    expect(env).toEqual({ PATH: '/bin', OMP_WAIT_POLICY: 'passive', UV_THREADPOOL_SIZE: '1' })
    expect(singleLibuvWorker(env)).toBe(true)
  })

  it('leaves the prebuilt binary, a GPU asked for by name and a size the user chose alone', () => {
    expect(modelProcessEnv({ PATH: '/bin' }, false)).toEqual({ PATH: '/bin' })
    expect(modelProcessEnv({ NODE_LLAMA_CPP_GPU: 'cuda' }, true)).toEqual({ NODE_LLAMA_CPP_GPU: 'cuda' })
    expect(modelProcessEnv({ UV_THREADPOOL_SIZE: '8' }, true)).toEqual({ UV_THREADPOOL_SIZE: '8' })
    // NODE_LLAMA_CPP_GPU=false asks for the CPU: the CPU build runs, so one worker.
    expect(modelProcessEnv({ NODE_LLAMA_CPP_GPU: 'false' }, true).UV_THREADPOOL_SIZE).toBe('1')
  })

  it('reads the worker count as libuv does', () => {
    expect(libuvWorkers({})).toBe(4)
    expect(libuvWorkers({ UV_THREADPOOL_SIZE: '1' })).toBe(1)
    expect(libuvWorkers({ UV_THREADPOOL_SIZE: '2000' })).toBe(1024)
    expect(libuvWorkers({ UV_THREADPOOL_SIZE: 'many' })).toBe(1)
    expect(libuvWorkers({ UV_THREADPOOL_SIZE: '0' })).toBe(1)
    expect(singleLibuvWorker({})).toBe(false)
  })
})
