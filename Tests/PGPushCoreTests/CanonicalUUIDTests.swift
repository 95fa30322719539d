import Foundation
import PGPushCore
import Testing

@Suite struct CanonicalUUIDTests {
    @Test func formatsAndParsesLikeFoundation() {
        for _ in 0..<2000 {
            let uuid = UUID()
            #expect(uuid.lowercasedString == uuid.uuidString.lowercased())
            #expect(UUID(canonicalBytes: Array(uuid.uuidString.utf8)) == uuid)
            #expect(UUID(canonicalBytes: Array(uuid.lowercasedString.utf8)) == uuid)
        }
    }

    @Test(arguments: ["", "123e4567-e89b-12d3-a456-42661417400", "123e4567e89b-12d3-a456-4266141740000",
                      "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456_426614174000"])
    func rejectsNonCanonicalText(text: String) {
        #expect(UUID(canonicalBytes: Array(text.utf8)) == nil)
    }
}
