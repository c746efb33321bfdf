/**
 * The application menu as data (no Electron import at runtime, so it is unit-tested): File (add model, open
 * database), Experiments (the Workbench, then every registered suite by name: it opens the Workbench with the suite
 * selected and its "Run whole suite" button, which runs the whole grid and stores its report), View (the screens), Help.
 */
import type { MenuItemConstructorOptions } from 'electron'
import type { View } from '../api/app'

export interface MenuActions {
  addModel(): void
  openDatabase(): void
  navigate(view: View): void
  startSuite(suiteId: string): void
  about(): void
  openDocs(): void
}

export interface MenuContext {
  suites: readonly { id: string; name: string }[]
  isMac: boolean
  /** Development builds add reload and developer tools to View. */
  isDev: boolean
}

export function buildMenuTemplate(context: MenuContext, actions: MenuActions): MenuItemConstructorOptions[] {
  const suiteItems: MenuItemConstructorOptions[] = context.suites.map((suite) => ({
    label: suite.name,
    click: () => actions.startSuite(suite.id)
  }))
  const view = (label: string, target: View, key: string): MenuItemConstructorOptions => ({
    label,
    accelerator: `CmdOrCtrl+${key}`,
    click: () => actions.navigate(target)
  })
  return [
    ...(context.isMac ? [{ role: 'appMenu' } as MenuItemConstructorOptions] : []),
    {
      label: 'File',
      submenu: [
        { label: 'Add Model…', accelerator: 'CmdOrCtrl+O', click: () => actions.addModel() },
        { label: 'Open Database…', accelerator: 'CmdOrCtrl+Shift+O', click: () => actions.openDatabase() },
        { type: 'separator' },
        context.isMac ? { role: 'close' } : { role: 'quit' }
      ]
    },
    { role: 'editMenu' },
    {
      label: 'Experiments',
      submenu: [
        { label: 'Workbench', accelerator: 'CmdOrCtrl+R', click: () => actions.navigate('workbench') },
        ...(suiteItems.length > 0 ? [{ type: 'separator' } as MenuItemConstructorOptions, ...suiteItems] : [])
      ]
    },
    {
      label: 'View',
      submenu: [
        view('Chat', 'chat', '1'),
        view('Workbench', 'workbench', '2'),
        view('Runs', 'runs', '3'),
        view('Models', 'models', '4'),
        view('Advisor', 'advisor', '5'),
        ...(context.isDev
          ? [{ type: 'separator' } as MenuItemConstructorOptions, { role: 'reload' } as MenuItemConstructorOptions, { role: 'toggleDevTools' } as MenuItemConstructorOptions]
          : []),
        { type: 'separator' },
        { role: 'togglefullscreen' }
      ]
    },
    {
      role: 'help',
      submenu: [
        { label: 'About SpecLab', click: () => actions.about() },
        { label: 'Documentation', click: () => actions.openDocs() }
      ]
    }
  ]
}
