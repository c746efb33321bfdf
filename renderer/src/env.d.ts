/// <reference types="svelte" />
/// <reference path="../../electron/preload/index.d.ts" />
