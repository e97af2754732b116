// Loaded before the test files of every `bun test` run (bunfig.toml): hooks here run once for the whole run.
import { afterAll } from 'bun:test'
import { removeCompiledBinary } from './support/compiled-binary'

afterAll(removeCompiledBinary)
