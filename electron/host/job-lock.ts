/**
 * One job at a time uses the loaded models (a chat generation, a workbench run, a load, a perplexity pass):
 * they share llama.cpp contexts and the CPU, and measured speeds mean nothing when two jobs compete.
 */
import { UserInputError } from '../engine/errors'

export class JobLock {
  private job: string | null = null

  get busy(): string | null {
    return this.job
  }

  /**
   * Waits up to `waitMs` for the lock (a perplexity pass or an unload is over in moments), then takes it or says
   * who holds it.
   */
  async acquireSoon(label: string, waitMs = 15_000): Promise<() => void> {
    const deadline = Date.now() + waitMs
    while (this.job !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    return this.acquire(label)
  }

  /** Takes the lock or says who holds it; call the returned function to release. */
  acquire(label: string): () => void {
    if (this.job !== null) throw new UserInputError(`the models are busy (${this.job}); wait for it to finish or stop it`)
    this.job = label
    let released = false
    return () => {
      if (released) return
      released = true
      this.job = null
    }
  }
}
