// The worklet module is bundled as a file of its own (`with { type: 'file' }`): importing it gives its hashed URL.
declare const url: string
export default url
