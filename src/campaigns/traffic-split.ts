/**
 * Traffic split between agents / agent versions: deterministic allocation of contacts to weighted variants.
 *
 * Allocation is weighted rendezvous hashing: every variant draws a per-contact exponential "arrival time"
 * -ln(u) / weight, where u comes from a hash of (seed, variant id, contact key), and the earliest arrival wins.
 * Variant ids (not list positions) enter the hash, so reordering changes nothing; removing a variant moves only its
 * contacts; raising one weight only pulls contacts into that variant; lowering one only pushes contacts out of it.
 */

import type { TrafficVariant } from '../db/schema/campaigns'
import type { Problem } from '../lib/problem'

export type { TrafficVariant }

/** A variant as the request sends it: `id` is optional and never trusted (ids are kept per pair, see below). */
export type TrafficVariantInput = {
  workflow_id: number
  workflow_definition_id?: number | null
  weight: number
  id?: string
}

export const MIN_VARIANTS = 1
export const MAX_VARIANTS = 5
export const TOTAL_WEIGHT = 100

/**
 * xxHash64 is a published algorithm, so allocations do not change with the Bun version or process; the top 53 bits
 * become a uniform number in (0, 1).
 */
function unitHash(key: string): number {
  const bits = Number(Bun.hash.xxHash64(key) >> 11n)
  return (bits + 0.5) / 2 ** 53
}

/** The variant a contact is allocated to. Same (contactKey, seed, set of variants) → same variant. */
export function assignVariant(contactKey: string, seed: string, variants: readonly TrafficVariant[]): TrafficVariant {
  let winner: TrafficVariant | undefined
  let earliest = Infinity
  for (const variant of variants) {
    if (!(variant.weight > 0)) continue
    const arrival = -Math.log(unitHash(`${seed}|${variant.id}|${contactKey}`)) / variant.weight
    // Ties are practically impossible; the id comparison keeps the answer independent of list order anyway.
    if (arrival < earliest || (arrival === earliest && winner !== undefined && variant.id < winner.id)) {
      winner = variant
      earliest = arrival
    }
  }
  if (!winner) throw new Error('Traffic split has no variant with a positive weight')
  return winner
}

const pairKey = (agentId: number, definitionId: number | null | undefined) => `${agentId}:${definitionId ?? 'latest'}`

/**
 * A new variant id derived from the (workflow, definition) pair, e.g. `w12-d34` or `w12-latest`, so a pair that is
 * removed and added back gets its old id (and its old contacts) again. A numeric suffix avoids any id in `existingIds`.
 */
export function mintVariantId(agentId: number, definitionId: number | null, existingIds: Iterable<string>): string {
  const taken = new Set(existingIds)
  const base = `w${agentId}-${definitionId === null ? 'latest' : `d${definitionId}`}`
  let id = base
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`
  return id
}

/**
 * The next variant list with ids filled in: a pair already present in `previous` keeps its id; a new pair gets a
 * minted one. Ids sent by the client are ignored, so an id can never move to a different pair.
 * `previous` may include removed variants, so a pair that comes back keeps its old id.
 */
export function reconcileVariantIds(
  previous: readonly TrafficVariant[],
  next: readonly TrafficVariantInput[],
): TrafficVariant[] {
  const idByPair = new Map(previous.map((v) => [pairKey(v.workflow_id, v.workflow_definition_id), v.id]))
  const usedIds = new Set(previous.map((v) => v.id))
  return next.map((input) => {
    const definitionId = input.workflow_definition_id ?? null
    const key = pairKey(input.workflow_id, definitionId)
    let id = idByPair.get(key)
    if (id === undefined) {
      id = mintVariantId(input.workflow_id, definitionId, usedIds)
      idByPair.set(key, id)
      usedIds.add(id)
    }
    return { id, workflow_id: input.workflow_id, workflow_definition_id: definitionId, weight: input.weight }
  })
}

/** True when both lists allocate identically: the same ids with the same weights, in any order. */
export function isSameSplit(a: readonly TrafficVariant[], b: readonly TrafficVariant[]): boolean {
  if (a.length !== b.length) return false
  const weightById = new Map(a.map((v) => [v.id, v.weight]))
  return b.every((v) => weightById.get(v.id) === v.weight)
}

/** Problems with a requested split, located relative to the split (e.g. `variants`, 0, `weight`); empty when valid. */
export function validateSplit(variants: readonly TrafficVariantInput[]): Problem[] {
  const problems: Problem[] = []
  if (variants.length < MIN_VARIANTS || variants.length > MAX_VARIANTS) {
    problems.push({
      path: ['variants'],
      message: `traffic_split must have ${MIN_VARIANTS} to ${MAX_VARIANTS} variants, got ${variants.length}`,
    })
  }
  const firstIndexByPair = new Map<string, number>()
  let total = 0
  variants.forEach((variant, index) => {
    if (!Number.isInteger(variant.workflow_id) || variant.workflow_id <= 0) {
      problems.push({ path: ['variants', index, 'workflow_id'], message: 'workflow_id must be a positive integer' })
    }
    if (!Number.isInteger(variant.weight) || variant.weight < 1 || variant.weight > 100) {
      problems.push({
        path: ['variants', index, 'weight'],
        message: `weight must be a whole number from 1 to 100, got ${variant.weight}`,
      })
    }
    total += variant.weight
    const key = pairKey(variant.workflow_id, variant.workflow_definition_id)
    const first = firstIndexByPair.get(key)
    if (first === undefined) firstIndexByPair.set(key, index)
    else
      problems.push({
        path: ['variants', index],
        message: `repeats the workflow_id and workflow_definition_id of variants[${first}]`,
      })
  })
  if (variants.length > 0 && total !== TOTAL_WEIGHT) {
    problems.push({ path: ['variants'], message: `traffic_split weights must total ${TOTAL_WEIGHT}, got ${total}` })
  }
  return problems
}
