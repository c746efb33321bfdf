/** Chart category labels: a method with its settings broken into short lines, cut with … past the last one. */
import { describe, expect, it } from 'vitest'
import { chartLabelLines } from '../../renderer/src/lib/format'

describe('chartLabelLines', () => {
  it('keeps a short label on one line', () => {
    expect(chartLabelLines('sd γ=6')).toEqual(['sd γ=6'])
    expect(chartLabelLines('ar')).toEqual(['ar'])
  })

  it('breaks a long label at spaces into lines of about the width, each word whole', () => {
    expect(chartLabelLines('llama-server:draft γ=6 llamaserver.nMax=6', 16)).toEqual(['llama-server:draft', 'γ=6', 'llamaserver.nMax=6'])
    expect(chartLabelLines('sd-pmin γ=8 pmin.p=0.3', 16)).toEqual(['sd-pmin γ=8', 'pmin.p=0.3'])
  })

  it('cuts what is left past the last line with …', () => {
    const lines = chartLabelLines('llama-server:draft γ=6 llamaserver.nMax=6 llamaserver.nMin=0 llamaserver.pMin=0', 16, 3)
    expect(lines).toEqual(['llama-server:draft', 'γ=6', 'llamaserver.nMax=6 …'])
  })
})
