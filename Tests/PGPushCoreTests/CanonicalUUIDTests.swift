import Foundation
import PGPushCore
import Testing

@Suite struct CanonicalUUIDTests {
    static func parsed(_ text: String) -> UUID? {
        Array(text.utf8).withUnsafeBufferPointer(UUID.init(canonicalText:))
    }

    @Test func formatsAndParsesLikeFoundation() {
        for _ in 0..<2000 {
            let uuid = UUID()
            #expect(uuid.lowercasedString == uuid.uuidString.lowercased())
            #expect(Self.parsed(uuid.uuidString) == uuid)
            #expect(Self.parsed(uuid.lowercasedString) == uuid)
        }
    }

    @Test(arguments: ["", "123e4567-e89b-12d3-a456-42661417400", "123e4567e89b-12d3-a456-4266141740000",
                      "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456_426614174000"])
    func rejectsNonCanonicalText(text: String) {
        #expect(Self.parsed(text) == nil)
    }
}
