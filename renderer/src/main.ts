import { mount } from 'svelte'
import './app.css'
import App from './App.svelte'
import { preventFileNavigation } from './lib/file-drop'

// A file dropped anywhere the page does not take it must not replace the app (the Models screen takes .gguf files).
preventFileNavigation(document)

const target = document.getElementById('app')
if (!target) throw new Error('#app element missing from index.html')

export default mount(App, { target })
