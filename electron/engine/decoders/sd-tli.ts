/**
 * `sd-tli`: speculative decoding with a draft of ANOTHER vocabulary by Token-Level Intersection — Timor et al.,
 * "Accelerating LLM Inference with Lossless Speculative Decoding Algorithms for Heterogeneous Vocabularies"
 * (ICML 2025, arXiv:2502.05202), Algorithm 4 (TLI), as Hugging Face ships it (`UniversalSpeculativeDecodingGenerator`
 * with `AssistantToTargetTranslator` / `AssistantVocabTranslatorCache` in transformers/generation/candidate_generator.py).
 *
 * Algorithm. I = the tokens both vocabularies spell with the same byte string (model/vocabulary-bytes.ts: SentencePiece
 * `▁` and `<0xNN>`, byte-level BPE `Ġ`/`Ċ`…, control tokens never in I). Each draft position: the draft's warped
 * distribution q (temperature → top-k → top-p over its own vocabulary, the shared warp) is restricted to I and
 * renormalised, q_I(x) = q(x)·[x ∈ I] / Σ_{y ∈ I} q(y); a token is drawn from q_I (greedy: its argmax) and mapped to
 * the target's id of the same bytes. The target scores the γ proposals in one batched call and the standard rule
 * verifies them (sampling/verify.ts): accept with min(1, p/q_I), correct from norm(max(0, p − q_I)) over the
 * target's whole vocabulary, bonus from p after a fully accepted draft; greedy accepts iff the token is argmax p.
 * Lossless for sampling and greedy: q_I is exactly the law the proposal was drawn from, so Leviathan et al.'s
 * argument applies unchanged; the target's mass outside I is reached through the residual.
 *
 * Choices (the paper leaves them to the implementation):
 *  - q_I restricts the WARPED q (SpecLab transfers the draft's top-k logits), where HF suppresses the logits outside
 *    I before its warpers. Both are exact; ours keeps fewer candidates when top-k cuts into I.
 *  - Several draft ids spelling one byte string (SentencePiece `a` and `<0x61>`) add their mass on the one target id
 *    (q_I is the law of the proposed TARGET id); the draft continues from the draft id it drew.
 *  - No mass of q in I at a position: drafting stops there (stoppedBy 'intersection'); with nothing drafted the
 *    round is the target's own token (provenance 'target'), one target call, as in a γ = 0 round.
 *  - The draft is fed the text the target produced (DraftTextSync below): its own accepted tokens as drawn, a
 *    committed target token in I as the draft id of its bytes (1:1, HF's target_to_assistant_input_ids), and text
 *    a target-only token brought in (a correction or bonus outside I) re-tokenised with the draft's tokenizer from
 *    the last sync point — a draft-token boundary at least LOOKBEHIND tokens back where re-tokenising reproduces the
 *    text byte for byte, else the whole text (HF re-tokenises the new target text alone; the look-behind lets the
 *    draft's merges span the junction). A SentencePiece draft's tokenizer prefixes a space (add_space_prefix), so
 *    a window is given without its leading space, or its lone leading space token is dropped.
 *  - The prompt reaches the draft as text: the target's prompt tokens spelled as bytes, tokenized by the draft after
 *    its BOS. A draft whose tokenizer adds a space at the very start of a text the target began without one sees it.
 * TLI is a drafter (`tliDrafter`), not a decoder of its own: the speculative round (round.ts) scores, verifies and
 * records its proposals as it does the draft model's.
 * Step records are sd's (γ proposed, accepted, σ, η, draft entropies H(q_I), provenance 'draft' / 'resampled' /
 * 'bonus' / 'target'), stage 'sd-tli', and `decision` holds |I| (`intersection`), the mean mass q put inside I at the
 * drafted positions (`draftMass`), the draft tokens re-tokenised before the round (`retokenised`) and why drafting
 * stopped (`stoppedBy`: 'cap', 'intersection', 'eog').
 */
import { UnencodableTextError } from '../errors'
import type { LanguageModel, ModelSession } from '../model/types'
import {
  bytesOfTokens,
  completeUtf8Length,
  crossVocabulary,
  utf8Of,
  type CrossVocabulary
} from '../model/vocabulary-bytes'
import { argmax, entropy, fromWeights, sample, type Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { plainFixedLength } from '../policies/fixed'
import type { Drafter } from './drafter'
import { countedCall } from './round'
import { now, rewindTo } from './session-sync'
import { speculativeDecoder } from './speculative'
import type { Decoder } from './types'

/** Draft tokens before the last synced one that a re-tokenisation may rewrite (see the file comment). */
export const LOOKBEHIND = 4
/** Cut points tried before re-tokenising the whole text. */
const MAX_CUT_ATTEMPTS = 4

/** The draft distribution restricted to the intersection: over draft ids (to draw from) and over target ids (q_I). */
export interface Restricted {
  draft: Distribution
  target: Distribution
  /** Σ_{x ∈ I} q(x): how much of q survived the restriction. */
  mass: number
}

/** q restricted to I and renormalised, or null when q puts no mass in I. */
export function restrictToIntersection(q: Distribution, map: CrossVocabulary): Restricted | null {
  const ids: number[] = []
  const weights: number[] = []
  const byTarget = new Map<number, number>()
  let mass = 0
  for (let i = 0; i < q.ids.length; i++) {
    const mapped = map.draftToTarget[q.ids[i]] ?? -1
    if (mapped < 0 || !(q.probs[i] > 0)) continue
    ids.push(q.ids[i])
    weights.push(q.probs[i])
    byTarget.set(mapped, (byTarget.get(mapped) ?? 0) + q.probs[i])
    mass += q.probs[i]
  }
  if (!(mass > 0)) return null
  return { draft: fromWeights(ids, weights), target: fromWeights([...byTarget.keys()], [...byTarget.values()]), mass }
}

/**
 * The draft's token sequence for the text the target has produced so far. `text` is the target's sequence spelled
 * as bytes (a binary string); the draft's tokens cover its first `covered` bytes (after `extra` bytes of its own: an
 * SPM draft's space prefix at the very start). Appending a target token in I (or the draft's own accepted token)
 * keeps them in step; anything else leaves the tail uncovered until `sync` re-tokenises it.
 */
export class DraftTextSync {
  /** The draft's token sequence: its BOS (when it has one), then the text. */
  readonly tokens: number[] = []
  /** Draft-side byte offset where each token ends; tokens[i] spans [ends[i−1], ends[i]). */
  private readonly ends: number[] = []
  /** Whether a re-tokenisation may start at tokens[i] (its start offset is known to be exact). */
  private readonly cuttable: boolean[] = []
  private readonly first: number
  private text = ''
  private covered = 0
  private extra = 0
  /** Draft tokens written by re-tokenisation so far (diagnostics). */
  retokenised = 0

  constructor(
    private readonly draft: LanguageModel,
    private readonly map: CrossVocabulary,
    promptTokens: readonly number[]
  ) {
    if (draft.info.bos !== null) this.push(draft.info.bos, 0, false)
    this.first = this.tokens.length
    this.text = bytesOfTokens(map.target, promptTokens)
  }

  /** True when the draft's tokens spell the whole text. */
  get inSync(): boolean {
    return this.covered === this.text.length
  }

  /** A committed target token; `drafted` is the draft id it was proposed as (accepted draft tokens). */
  append(targetToken: number, drafted?: number): void {
    const bytes = this.map.target.bytes[targetToken] ?? ''
    if (bytes === '') return // control tokens spell nothing
    const wasInSync = this.inSync
    this.text += bytes
    const draftId = drafted ?? this.map.targetToDraft[targetToken] ?? -1
    if (!wasInSync || draftId < 0) return
    this.push(draftId, bytes.length, true)
    this.covered = this.text.length
  }

  /** Re-tokenises the uncovered tail (with its look-behind) when there is one; returns the draft tokens written. */
  sync(): number {
    if (this.inSync) return 0
    const candidates = this.cutCandidates()
    for (const index of candidates.slice(0, MAX_CUT_ATTEMPTS)) if (this.retokeniseFrom(index, false)) return this.tokens.length - index
    this.retokeniseFrom(this.first, true)
    return this.tokens.length - this.first
  }

  /** Token indices a re-tokenisation may start at, latest first: LOOKBEHIND tokens before the end at most. */
  private cutCandidates(): number[] {
    const out: number[] = []
    for (let i = Math.min(this.tokens.length - LOOKBEHIND, this.tokens.length - 1); i > this.first; i--) {
      if (!this.cuttable[i]) continue
      const at = this.startOf(i) - this.extra
      if (at < 0 || at > this.covered) continue
      if (at < this.text.length && (this.text.charCodeAt(at) & 0xc0) === 0x80) continue // inside a UTF-8 sequence
      out.push(i)
    }
    return out
  }

  private startOf(index: number): number {
    return index === 0 ? 0 : this.ends[index - 1]
  }

  /**
   * Replaces tokens[index…] by the draft's tokenization of the text from there. Unless `force`, gives up (false,
   * nothing changed) when the result would not spell the text exactly.
   */
  /**
   * The draft's tokens for `text`, or none when its tokenizer cannot encode it (a SentencePiece vocabulary without
   * byte fallback aborts llama.cpp on unknown characters: the model refuses first). The draft then simply does not
   * see that text — it only proposes; the target verifies — so the output stays exact.
   */
  private tokenizeForDraft(text: string): number[] {
    try {
      return this.draft.tokenize(utf8Of(text))
    } catch (error) {
      if (error instanceof UnencodableTextError) return []
      throw error
    }
  }

  private retokeniseFrom(index: number, force: boolean): boolean {
    const at = index === this.first ? 0 : this.startOf(index) - this.extra
    const window = this.text.slice(at)
    const complete = completeUtf8Length(window)
    const body = window.slice(0, complete)
    let tokens: number[]
    let spelled: string
    let extra = 0
    if (body === '') {
      tokens = []
      spelled = ''
    } else if (this.map.draftAddsSpace && body.startsWith(' ') && body.length > 1) {
      tokens = this.tokenizeForDraft(body.slice(1))
      spelled = bytesOfTokens(this.map.draft, tokens)
    } else if (this.map.draftAddsSpace) {
      tokens = this.tokenizeForDraft(body)
      spelled = bytesOfTokens(this.map.draft, tokens)
      if (tokens.length > 0 && this.map.draft.bytes[tokens[0]] === ' ' && spelled === ' ' + body) {
        tokens = tokens.slice(1)
        spelled = body
      } else if (index === this.first && spelled === ' ' + body) extra = 1 // the draft's own space at the very start
    } else {
      tokens = this.tokenizeForDraft(body)
      spelled = bytesOfTokens(this.map.draft, tokens)
    }
    const exact = spelled.length === body.length + extra && spelled.endsWith(body)
    if (!exact && !force) return false
    this.truncate(index)
    if (index === this.first) this.extra = extra
    tokens.forEach((token, i) => {
      const length = (this.map.draft.bytes[token] ?? '').length
      this.push(token, length, exact || i === 0)
    })
    if (!exact && tokens.length > 0) this.ends[this.ends.length - 1] = this.startOf(index) + body.length + extra // keep offsets on the text
    this.covered = at + body.length
    // An incomplete UTF-8 sequence at the end: its bytes as the draft's byte tokens when it has them, else later.
    const tail = window.slice(complete)
    const tailIds = [...tail].map((byte) => this.map.draft.idOf.get(byte) ?? -1)
    if (tail !== '' && tailIds.every((id) => id >= 0)) {
      for (const id of tailIds) this.push(id, 1, false)
      this.covered = this.text.length
    }
    this.retokenised += this.tokens.length - index
    return true
  }

  private push(token: number, length: number, cuttable: boolean): void {
    const start = this.ends.length === 0 ? 0 : this.ends[this.ends.length - 1]
    this.tokens.push(token)
    this.ends.push(start + length)
    this.cuttable.push(cuttable)
  }

  private truncate(length: number): void {
    this.tokens.length = length
    this.ends.length = length
    this.cuttable.length = length
  }
}

/** For tests and diagnostics: the text the draft's tokens spell, as UTF-8. */
export function draftText(sync: DraftTextSync, map: CrossVocabulary): string {
  return utf8Of(bytesOfTokens(map.draft, sync.tokens))
}

interface TliDraft {
  /** Proposals as target ids (verified) and as the draft ids they were drawn as. */
  targetIds: number[]
  draftIds: number[]
  /** q_I over target ids, per proposal. */
  q: Distribution[]
  entropies: number[]
  /** Σ q over I at every evaluated position (the last one too when it had none). */
  masses: number[]
  calls: number
  ms: number
  stoppedBy: 'cap' | 'intersection' | 'eog'
}

/** How q is restricted to I: restrictToIntersection, replaced only by the tests' negative control. */
export type Restriction = (q: Distribution, map: CrossVocabulary) => Restricted | null

async function draftIntersection(
  session: ModelSession,
  sequence: readonly number[],
  limit: number,
  map: CrossVocabulary,
  target: LanguageModel,
  greedy: boolean,
  rng: Prng,
  restrict: Restriction
): Promise<TliDraft> {
  const draft: TliDraft = { targetIds: [], draftIds: [], q: [], entropies: [], masses: [], calls: 0, ms: 0, stoppedBy: 'cap' }
  let pending = await rewindTo(session, sequence)
  for (;;) {
    const [q] = await countedCall(session, pending, draft)
    const restricted = restrict(q, map)
    draft.masses.push(restricted?.mass ?? 0)
    if (!restricted) {
      draft.stoppedBy = 'intersection'
      return draft
    }
    const token = greedy ? argmax(restricted.draft) : sample(restricted.draft, rng)
    const mapped = map.draftToTarget[token]
    draft.draftIds.push(token)
    draft.targetIds.push(mapped)
    draft.q.push(restricted.target)
    draft.entropies.push(entropy(restricted.target))
    if (draft.targetIds.length >= limit) return draft
    if (target.isEndOfGeneration(mapped)) {
      draft.stoppedBy = 'eog'
      return draft
    }
    pending = [token]
  }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000

/** Why TLI drafting stopped, in the words the policy seam knows: the cap, the drafter (no mass in I), the engine (EOG). */
const DRAFT_STOPS = { cap: 'cap', intersection: 'drafter', eog: 'engine' } as const

/**
 * TLI as a drafter of the speculative round (HF's UniversalSpeculativeDecodingGenerator is a candidate generator too):
 * each round re-syncs the draft's text, drafts from q_I and proposes the mapped target ids with q_I as their law; the
 * committed tokens are appended to the draft's text afterwards (its own accepted draws as drawn).
 */
export const tliDrafter: Drafter = tliDrafterWith(restrictToIntersection)

/** The TLI drafter with a given restriction of q to I (the tests' negative control passes a broken one). */
export function tliDrafterWith(restrict: Restriction): Drafter {
  return {
    stage: 'sd-tli',
    async open(models, request) {
      const draftModel = models.draft
      if (!draftModel) throw new Error('sd-tli needs a draft model')
      const map = crossVocabulary(models.target, draftModel)
      const session = await draftModel.createSession(request.warp)
      const sync = new DraftTextSync(draftModel, map, request.promptTokens)
      let drawn: number[] = []
      return {
        async propose({ limit, greedy, rng }) {
          const started = now()
          const retokenised = sync.sync()
          const syncMs = now() - started
          const draft = await draftIntersection(session, sync.tokens, limit, map, models.target, greedy, rng, restrict)
          drawn = draft.draftIds
          return {
            tokens: draft.targetIds,
            distributions: draft.q,
            entropies: draft.entropies,
            calls: draft.calls,
            ms: draft.ms + syncMs,
            stoppedBy: DRAFT_STOPS[draft.stoppedBy],
            facts: {
              intersection: map.size,
              draftMass: round3(draft.masses.reduce((a, b) => a + b, 0) / draft.masses.length),
              retokenised,
              stoppedBy: draft.stoppedBy
            }
          }
        },
        update({ accepted, emitted }) {
          emitted.forEach((token, i) => sync.append(token, i < accepted ? drawn[i] : undefined))
        },
        dispose: () => session.dispose()
      }
    }
  }
}

/** sd-tli: the speculative round with the TLI drafter, γ fixed, verified by the standard rule against q_I. */
export const sdTliDecoder = (options: { gamma: number; restrict?: Restriction }): Decoder =>
  speculativeDecoder(plainFixedLength(options.gamma), options.restrict ? tliDrafterWith(options.restrict) : tliDrafter)
