/**
 * A read's answer already serialized as JSON, built where the rows were read (the read worker) and sent
 * as is: the event loop neither parses the documents nor serializes them again.
 */
export class JsonText {
  constructor(readonly text: string) {}
}
