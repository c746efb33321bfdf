/**
 * TF-IDF score of a prompt against the prompts seen so far (a feature of 004 §5's prompt embedding; the paper
 * does not define the score further). Terms are token ids; idf uses scikit-learn's smoothed form
 * idf(t) = ln((1 + N) / (1 + df(t))) + 1, and a prompt's score is Σ_t tf(t)·idf(t) with tf(t) = count / length:
 * the mean idf of its tokens — high for prompts made of tokens rarely seen before.
 */
export class TfIdfCorpus {
  private documents = 0
  private readonly documentFrequency = new Map<number, number>()

  /** Adds the prompt to the corpus, then scores it (so the first prompt scores 1: every idf is ln(2/2)+1). */
  addAndScore(tokens: readonly number[]): number {
    const distinct = new Set(tokens)
    this.documents += 1
    for (const t of distinct) this.documentFrequency.set(t, (this.documentFrequency.get(t) ?? 0) + 1)
    return this.score(tokens)
  }

  score(tokens: readonly number[]): number {
    if (tokens.length === 0) return 0
    const counts = new Map<number, number>()
    for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1)
    let total = 0
    for (const [t, count] of counts) {
      const idf = Math.log((1 + this.documents) / (1 + (this.documentFrequency.get(t) ?? 0))) + 1
      total += (count / tokens.length) * idf
    }
    return total
  }
}
