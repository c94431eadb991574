// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Loan, LoanTerms} from "./Loan.sol";

/**
 * @notice The loans of one chain, for loan books: every loan it creates or is given emits
 * `LoanRegistered(loan, lender, borrower)`, so an indexer can follow them as a factory source.
 * A loan is created by one of its parties or by the registry's owner (the platform preapproving
 * it); loans deployed elsewhere (a lending pool's) are registered by the owner.
 */
contract LoanRegistry {
    event LoanRegistered(address indexed loan, address indexed lender, address indexed borrower);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    error NotOwner(address account);
    error NotAParty(address account);
    error AlreadyRegistered(address loan);

    address public owner;
    mapping(address loan => bool) public isRegistered;
    address[] internal _loans;
    mapping(address account => address[]) internal _loansOf;

    constructor(address owner_) {
        owner = owner_;
        emit OwnershipTransferred(address(0), owner_);
    }

    function transferOwnership(address newOwner) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    /// @notice Deploys and registers a loan (preapproved: the lender funds it, the borrower commits).
    function createLoan(
        address lender,
        address borrower,
        address principalToken,
        uint256 principal,
        uint256 aprWithTwoDecimals,
        uint256 termDays,
        uint256 paymentIntervalInSeconds,
        address collateralToken,
        uint256 maintenanceCollateralRatio
    ) external returns (address loan) {
        if (msg.sender != owner && msg.sender != lender && msg.sender != borrower) revert NotAParty(msg.sender);
        LoanTerms memory terms = LoanTerms({
            collateralToken: collateralToken,
            maintenanceCollateralRatio: maintenanceCollateralRatio,
            paymentIntervalInSeconds: paymentIntervalInSeconds,
            notifyLender: false
        });
        loan = address(new Loan(lender, borrower, principalToken, principal, aprWithTwoDecimals, termDays, terms));
        _add(loan, lender, borrower);
    }

    /// @notice Registers a loan deployed elsewhere (e.g. by a lending pool).
    function register(address loan) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _add(loan, Loan(loan).lender(), Loan(loan).borrower());
    }

    function loanCount() external view returns (uint256) {
        return _loans.length;
    }

    function loanAt(uint256 i) external view returns (address) {
        return _loans[i];
    }

    /// @notice Every loan an account lends or borrows, in registration order.
    function loansOf(address account) external view returns (address[] memory) {
        return _loansOf[account];
    }

    function _add(address loan, address lender, address borrower) internal {
        if (isRegistered[loan]) revert AlreadyRegistered(loan);
        isRegistered[loan] = true;
        _loans.push(loan);
        _loansOf[lender].push(loan);
        _loansOf[borrower].push(loan);
        emit LoanRegistered(loan, lender, borrower);
    }
}
